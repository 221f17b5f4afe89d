"""Streamlines of flow-field containers (seed ``002_…``): seeds, tracing, and writing the lines.

    points, offsets = headrace.trace("flow.hrc", headrace.streamlines.uniform_seeds("flow.hrc", 512),
                                     steps=1000, step_size=0.01, manager="mmap", threads=32)

Line ``i`` is ``points[offsets[i]:offsets[i + 1]]`` (world coordinates, float32), one line per seed in
seed order. The container holds a ``velocity`` field (float32 x 3) in the native-block layout
(``headrace generate flow``) or the Hilbert layout (``convert_to_hilbert``). ``manager="user"`` reads
through the block cache (``cache_bytes``, ``banks``, ``direct``; Hilbert units of ``unit_pages``
pages); ``manager="mmap"`` maps the file (``madvise_interval_s``, ``memory_budget_bytes``).
``device=0`` traces on the GPU (``manager="resident"``, its default there): the engine's queue reads the
units the lines ask for (``backend``) into a cache of ``cache_bytes`` in GPU memory, and every
half-line steps on its own GPU thread; ``manager="resident"`` with ``device="cpu"`` runs the same rounds
on CPU threads, the reference the GPU's lines equal bit for bit.

Under MPI (``headrace.distributed``) the seeds are shared in blocks among the ranks, and the field either
way :func:`distribution` picks: *replicate*, every rank reading any unit its lines need through its own
cache (the field is shared through the file), or *hand-off* (:func:`trace_handed`), every rank holding
its run of block planes along z and the blocks next to them, and a line that needs a block held elsewhere
handed to the rank that holds it. Both give one tracer's lines, bit for bit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Callable

import numpy as np

from headrace import _ext
from headrace._files import replacing
from headrace import errors
from headrace.errors import UsageError
from headrace.generate.flow import DEFAULT_BLOCK, default_block

__all__ = ["TraceResult", "trace", "trace_run", "trace_handed", "distribution", "DISTRIBUTIONS", "grid_of", "uniform_seeds", "rake_seeds", "feature_seeds", "load_seeds",
           "write_lines", "write_traced", "TERMINATION_CODES", "convert_to_hilbert", "convert_linear_flow", "traceable", "DEFAULT_BLOCK",
           "MOST_MADVISE_INTERVAL_S", "TraceNote", "velocity_of", "fitted_block", "fitted_hilbert_bits",
           "DEFAULT_HILBERT_BITS", "VELOCITY_NAMES", "VELOCITY_COMPONENTS"]

MOST_MADVISE_INTERVAL_S = 86400  # a day between madvise calls at most

TRACED_LAYOUTS = ("blocks", "hilbert")
DISTRIBUTIONS = ("auto", "replicate", "hand-off")


class TraceNote(UserWarning):
    """What :func:`traceable`, :func:`trace_run` or :func:`convert_linear_flow` chose for the user without
    being told (a float64 velocity traced in float32, smaller blocks for a small cache, Hilbert
    partitions fitted to a small grid), said once each; ``headrace trace`` prints them on stderr."""


def _warn(text: str) -> None:
    """``text`` as a :class:`TraceNote`, pointing at the first caller outside headrace."""
    import sys
    import warnings

    frame, level = sys._getframe(0), 1
    while frame.f_back is not None and (frame.f_globals.get("__name__", "").startswith("headrace")
                                        or frame.f_code.co_filename.endswith("contextlib.py")):
        frame, level = frame.f_back, level + 1
    warnings.warn(TraceNote(text), stacklevel=level)


def _blocks(count: int) -> str:
    return f"{count:,} block{'s' if count != 1 else ''}"


# Names a velocity goes by (case aside): of one field of 3 components, and of three scalar fields.
VELOCITY_NAMES = ("velocity", "vel", "u", "v", "uvw", "velocities", "vectors", "wind")
VELOCITY_COMPONENTS = (("u", "v", "w"), ("vx", "vy", "vz"), ("velx", "vely", "velz"), ("ux", "uy", "uz"),
                       ("velocity_x", "velocity_y", "velocity_z"), ("velocityx", "velocityy", "velocityz"))


def _asked_fields(field: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """``--field``'s names: None, one name, or three (``"u,v,w"`` or a sequence)."""
    if field is None:
        return None
    names = tuple(n.strip() for n in (field.split(",") if isinstance(field, str) else field))
    if len(names) not in (1, 3) or not all(names):
        raise UsageError(f"field {','.join(names)!r}: a velocity is one field of 3 components (NAME) or three scalar fields "
                         "(U,V,W)")
    return names


def _described(ds: Any) -> str:
    return ", ".join(f"{f.name} ({f.dtype} x {f.components})" for f in ds.fields)


def velocity_of(source: Any, field: str | Sequence[str] | None = None, *, label: str | None = None) -> tuple[str, ...]:
    """The field(s) a trace takes as the velocity of ``source`` (a container): ``field`` when given (a
    name of 3 components, or three names of 1: ``"u,v,w"``), else its one field of 3 components, else the
    one of them named as a velocity is (:data:`VELOCITY_NAMES`), else three scalar fields named as a
    velocity's components are (:data:`VELOCITY_COMPONENTS`). Each is floating point (traced in float32).
    Raises ``UnknownNameError`` for a field it lacks and ``UsageError`` naming the candidates otherwise;
    messages name ``label`` (the user's file) or the container's path."""
    import headrace

    ds = source if hasattr(source, "fields") else headrace.open(_path(source))
    label = label or os.fspath(ds.path)
    fields = {f.name: f for f in ds.fields}
    vectors = [f.name for f in ds.fields if f.components == 3]
    choices = (f"--field NAME for one of its fields of 3 components ({', '.join(vectors)})" if vectors else
               "--field U,V,W for three of its scalar fields")
    asked = _asked_fields(field)
    if asked is None:
        named = [name for name in vectors if name.lower() in VELOCITY_NAMES]
        folded = {name.lower(): name for name, f in fields.items() if f.components == 1}
        triples = [tuple(folded[c] for c in triple) for triple in VELOCITY_COMPONENTS if all(c in folded for c in triple)]
        if len(vectors) == 1:
            asked = (vectors[0],)
        elif len(named) == 1:
            asked = (named[0],)
        elif not vectors and len(triples) == 1:
            asked = triples[0]
        else:
            which = "several could be" if vectors or triples else "none is of 3 components"
            raise UsageError(f"{label}: which field is the velocity? {which} (fields: {_described(ds)}): {choices}")
    for name in asked:
        if name not in fields:
            raise errors.UnknownNameError(f"{label}: no field {name!r} (fields: {_described(ds)})")
        info = fields[name]
        want = 3 if len(asked) == 1 else 1
        if info.components != want:
            kind = "a velocity has 3 components" if want == 3 else "each of three velocity fields has 1 component"
            raise UsageError(f"{label}: field {name!r} is {info.dtype} x {info.components}; {kind}: {choices}")
        if np.dtype(info.dtype).kind != "f":
            raise UsageError(f"{label}: field {name!r} is {info.dtype}; a velocity is floating point (float16, float32 "
                             "or float64)")
    return asked


def _velocity_dtype(ds: Any, names: Sequence[str]) -> str:
    """The stored type of the velocity (one name, or the widest of three)."""
    return str(np.result_type(*(np.dtype(ds.field(name).dtype) for name in names)))


def _velocity_grid(ds: Any, frame: int, names: Sequence[str], shape: tuple[int, int, int]) -> np.ndarray:
    """A frame's velocity as a (Z, Y, X, 3) float32 grid, from one field of 3 components or three of 1."""
    if len(names) == 1:
        return ds.read(frame, names[0]).reshape(*shape, 3).astype(np.float32, copy=False)
    return np.stack([ds.read(frame, name).reshape(shape) for name in names], axis=-1).astype(np.float32, copy=False)


SMALLEST_BLOCK_SIDE = 2  # a block of fewer points a side than a cell has corners is not worth its lookup
UNITS_WANTED = 64  # blocks a cache should hold when blocks are made to fit it: a step's cells, and room to spare
UNITS_NEEDED = 8  # the least: the corners of one cell (the resident tracer's floor), one per bank too


def fitted_block(dims: Sequence[int], cache_bytes: int | None = None, banks: int = 1,
                 label: str = "the flow") -> tuple[tuple[int, int, int], str | None]:
    """Native blocks for a flow of ``dims`` (x, y, z) made on the fly for a cache of ``cache_bytes``
    (``None``: no cache, :func:`default_block`), and why they are smaller than that, if they are: the
    largest side halved until the cache holds :data:`UNITS_WANTED` blocks (one per bank at least), no side
    below :data:`SMALLEST_BLOCK_SIDE`. A ``UsageError`` names the smallest ``--cache-bytes`` that works when
    even those hold fewer than :data:`UNITS_NEEDED` (or ``banks``)."""
    block = list(default_block(dims))
    if cache_bytes is None:
        return (block[0], block[1], block[2]), None
    first = tuple(block)

    def held(sides: Sequence[int]) -> int:
        return int(cache_bytes) // (_POINT_BYTES * int(np.prod(sides)))

    wanted, needed = max(UNITS_WANTED, banks), max(UNITS_NEEDED, banks)
    while held(block) < wanted and max(block) > SMALLEST_BLOCK_SIDE:
        axis = 2 - int(np.argmax(block[::-1]))  # z first: rows along x stay long
        block[axis] = max(SMALLEST_BLOCK_SIDE, (block[axis] + 1) // 2)
    if held(block) < needed:
        least = needed * _POINT_BYTES * int(np.prod(block))
        raise UsageError(f"{label}: --cache-bytes {cache_bytes:,} holds {_blocks(held(block))} of even "
                         f"{_sides(block)} points ({_POINT_BYTES * int(np.prod(block)):,} bytes); a trace needs {needed}"
                         f"{f' (one per bank: --banks {banks})' if banks > UNITS_NEEDED else ''}: --cache-bytes {least} "
                         "or more")
    fitted = (block[0], block[1], block[2])
    if fitted == first:
        return fitted, None
    return fitted, (f"--cache-bytes {cache_bytes:,} holds {_blocks(held(first))} of {_sides(first)} points, so blocks of "
                    f"{_sides(fitted)} ({held(fitted):,} of them fit)")


_POINT_BYTES = 12  # float32 x 3


def _sides(block: Sequence[int]) -> str:
    return "x".join(str(int(side)) for side in block)


def _converted(path: str, folder: str, asked: tuple[str, ...] | None, say: Callable[[str], None]) -> str:
    """A user's file (not a container) converted into ``folder``, as ``headrace convert`` would, with what a
    velocity settles: a 4-D array ending in 3 is a grid of 3 components; of HDF5, the datasets asked for."""
    import warnings

    from headrace.convert import convert
    from headrace.convert.formats import InputFormat, guess_format, resolve_inputs
    from headrace.convert.source import ConversionNote

    kind = guess_format(resolve_inputs(path))
    options: dict[str, Any] = {}
    if kind in (InputFormat.NPY, InputFormat.HDF5, InputFormat.ZARR) and (asked is None or len(asked) == 1):
        options["components"] = 3
    if kind is InputFormat.HDF5 and asked is not None:
        options["dataset"] = list(asked)
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always", ConversionNote)
        try:
            grid = convert(path, Path(folder) / "grid.hrc", **options)
        except UsageError as why:
            if kind is InputFormat.HDF5 and asked is None:
                raise type(why)(f"{why} (trace converts {path} on the fly: --field NAME (or U,V,W) names the "
                                "velocity's datasets)") from None
            if "--" not in str(why):
                raise
            raise type(why)(f"{why} (trace converts {path} on the fly: `headrace convert` it with those options, "
                            "then trace the container)") from None
    for note in notes:
        if issubclass(note.category, ConversionNote):
            say(str(note.message))
        else:
            warnings.showwarning(note.message, note.category, note.filename, note.lineno)
    return os.fspath(grid)


def _expect_grid_order(ds: Any) -> None:
    """A ``UsageError`` unless ``ds`` is a grid in grid order (``layout = "linear"``, or a grid of no layout)."""
    layout = ds.attributes.get("layout", "linear")
    if layout != "linear" or "grid_dims" not in ds.attributes:
        found = f"layout {layout!r}" if "grid_dims" in ds.attributes else "no grid (no attribute grid_dims)"
        raise UsageError(f"{ds.path}: expected a flow field on a grid (layout blocks, hilbert or linear), found {found}")


# What opening a file that is not a container raises: another format's file, or a folder (a zarr store,
# an AMReX plotfile, a folder of .npy files).
_NOT_A_CONTAINER = (errors.BadMagicError, errors.NotAFileError)


def _traced_as_is(path: str, field: str | Sequence[str] | None) -> bool:
    """Whether the tracer reads ``path`` itself: a container in native blocks or the Hilbert layout (whose
    velocity is its field ``velocity``, float32 x 3)."""
    import headrace

    try:
        ds = headrace.open(path)
    except _NOT_A_CONTAINER:
        return False
    layout = ds.attributes.get("layout")
    if layout not in TRACED_LAYOUTS:
        return False
    asked = _asked_fields(field)
    if asked not in (None, ("velocity",)):
        raise UsageError(f"{path}: a flow in the {layout} layout is traced through its field 'velocity'; --field "
                         f"{','.join(asked or ())} needs the field in grid order (`headrace convert` the original file)")
    return True


@contextmanager
def traceable(source: os.PathLike | str, say: Callable[[str], None] | None = None, *,
              field: str | Sequence[str] | None = None, cache_bytes: int | None = None,
              banks: int = 1) -> Iterator[str]:
    """A path the tracer reads: ``source`` itself when it is a flow container in native blocks or the
    Hilbert layout; else, for a flow field in grid order (a container of ``layout = "linear"``, or any
    grid ``headrace convert`` reads: BOV, ``.npy``, ``.vti``, HDF5, zarr, ...), a container in native
    blocks made in a temporary folder for as long as the ``with`` lasts. The velocity is ``field``
    (:func:`velocity_of`: one field of 3 components, three scalar fields, or the one that looks like a
    velocity), any floating type, stored float32. Blocks are :func:`default_block`, or smaller where a
    cache of ``cache_bytes`` in ``banks`` banks would hold too few (:func:`fitted_block`). ``say`` is told
    once what was made and chosen, and how to skip it next time (default: a :class:`TraceNote` warning).
    Errors name ``source`` and its fields, never the temporary files."""
    import tempfile
    import time

    import headrace

    say = say or _warn
    path = os.fspath(_path(source))
    if _traced_as_is(path, field):
        yield path
        return
    asked = _asked_fields(field)
    with tempfile.TemporaryDirectory(prefix="headrace-trace-") as folder:
        started = time.perf_counter()
        try:
            _expect_grid_order(headrace.open(path))
            linear = path
        except _NOT_A_CONTAINER:  # a file (or a store's folder) headrace convert reads
            linear = _converted(path, folder, asked, say)
        grid = headrace.open(linear)
        if linear != path and asked is not None and len(grid.fields) == len(asked):
            asked = tuple(f.name for f in grid.fields)  # HDF5 datasets become fields of their last name
        names = velocity_of(grid, asked, label=path)
        dtype = _velocity_dtype(grid, names)
        if dtype != "float32":
            say(f"{path}: velocity is {dtype}: traced in float32")
        block, smaller = fitted_block(grid.attributes["grid_dims"], cache_bytes, banks, label=path)
        blocks = Path(folder) / "blocks.hrc"
        convert_linear_flow(linear, blocks, layout="blocks", block=block, field=names, say=lambda text: None)
        which = names[0] if len(names) == 1 else ",".join(names)
        once = f"`headrace convert {path} FLOW.hrc --layout blocks --block {' '.join(map(str, block))}`"
        if linear != path:
            once = f"`headrace convert {path} GRID.hrc`, then {once.replace(path, 'GRID.hrc', 1)},"
        say(f"{path}: a flow field in grid order, traced through native blocks of {_sides(block)} points made in a "
            f"temporary file from its field{'s' if len(names) > 1 else ''} {which} "
            f"({time.perf_counter() - started:.1f} s){f'; {smaller}' if smaller else ''}; {once} makes them once")
        try:
            yield os.fspath(blocks)
        except errors.Error as error:  # the tracer's errors name the file it read: name the user's
            text = str(error).replace(os.fspath(blocks), path)
            if text == str(error):
                raise
            try:
                renamed = type(error)(text)
            except TypeError:
                raise error from None
            raise renamed from None


# How the counters of runs over blocks of seeds make those of one run: counts add up, times are the slowest's.
_ADDED_UP = ("seeds", "points", "bytes_read", "cache_hits", "cache_misses", "cache_evictions", "madvise_calls",
             "budget_drops", "resident_rounds", "resident_units_loaded", "resident_evictions")
_SLOWEST = ("seconds", "resident_load_seconds", "resident_advance_seconds")


@dataclass
class TraceResult:
    """The lines and what the run did: seconds tracing, cache or mapping counters, how each line ended
    (``"backward/forward"`` ends), and each point's integration time (the sum of the signed steps that
    led to it: 0 at the seed, negative backward)."""

    points: np.ndarray
    offsets: np.ndarray
    ends: list[str]
    stats: dict[str, Any] = field(default_factory=dict)
    times: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    sampled: np.ndarray | None = None  # the velocities, sampled before the blocks made on the fly went

    @classmethod
    def joined(cls, parts: list[TraceResult]) -> TraceResult:
        """The lines of several runs over consecutive blocks of seeds (the ranks of a job, in order) as one run
        over all of them: what one run over every seed gives. Stats: the first part's, its counts summed, the
        slowest part's seconds, and every part's under ``"parts"``."""
        offsets = [np.zeros(1, np.int64)]
        base = 0
        for part in parts:
            offsets.append(np.asarray(part.offsets[1:], dtype=np.int64) + base)
            base += len(part.points)
        stats = dict(parts[0].stats) if parts else {}
        for key in _ADDED_UP:
            if key in stats:
                stats[key] = sum(p.stats.get(key, 0) for p in parts)
        for key in _SLOWEST:
            if key in stats:
                stats[key] = max(p.stats.get(key, 0.0) for p in parts)
        stats["parts"] = [p.stats for p in parts]
        sampled = [p.sampled for p in parts if p.sampled is not None]
        return cls(np.concatenate([p.points for p in parts]) if parts else np.zeros((0, 3), np.float32),
                   np.concatenate(offsets).astype(parts[0].offsets.dtype if parts else np.int64),
                   [end for p in parts for end in p.ends], stats,
                   np.concatenate([p.times for p in parts]) if parts else np.zeros(0, np.float32),
                   np.concatenate(sampled) if parts and len(sampled) == len(parts) else None)

    def velocities(self, threads: int = 0) -> np.ndarray:
        """The flow's velocity at every point, trilinear as the tracer sampled it ((N, 3) float32): the
        vectors ParaView colours lines by. Read from the traced file through a mapping (or kept from the
        run, where it traced blocks made on the fly)."""
        if self.sampled is not None:
            return self.sampled
        return _ext.sample_flow(self.stats["file"], np.ascontiguousarray(self.points, dtype=np.float32),
                                int(self.stats.get("frame", 0)), int(threads))


def _path(source: Any) -> str:
    return os.fspath(getattr(source, "path", source))


def _as_seeds(seeds: Any) -> np.ndarray:
    array = np.ascontiguousarray(seeds, dtype=np.float32)
    if array.ndim != 2 or array.shape[1] != 3 or array.shape[0] == 0:
        raise UsageError(f"seeds must be an (N, 3) array of world coordinates with N >= 1, got shape {array.shape}")
    return array


def trace_run(source: Any, seeds: Any, *, field: str | Sequence[str] | None = None, steps: int = 1000,
              step_size: float = 0.01, integrator: str = "rk4", direction: str = "forward", manager: str | None = None,
              device: int | str | None = "cpu", threads: int = 0, frame: int = 0, cache_bytes: int = 1 << 30,
              banks: int = 1, direct: bool = False, unit_pages: int = 96, madvise_interval_s: float = 4.0,
              memory_budget_bytes: int = 0, backend: str = "uring", progress: Callable[[int, int], bool] | None = None,
              say: Callable[[str], None] | None = None, **tuning: float) -> TraceResult:
    """Traces every seed; see the module docstring. ``tuning``: stagnant_speed, tolerance, min_step, max_step.

    ``source`` is a flow container in native blocks or the Hilbert layout, or any grid :func:`traceable`
    takes (a container in grid order, a ``.vti``, ``.npy``, HDF5 or zarr file, ...), whose velocity is
    ``field`` (:func:`velocity_of`); blocks made on the fly fit ``cache_bytes``, and what was chosen is
    told to ``say`` once (default: a :class:`TraceNote` warning). The lines' velocities are then sampled
    before the temporary blocks go.

    ``progress(ended, lines)`` is called now and then with the lines ended so far; returning False
    stops the run: every seed still has its line, and those cut short end ``"stopped"`` (in ``ends``)
    with the points they had."""
    if not 0 <= madvise_interval_s <= MOST_MADVISE_INTERVAL_S:  # also NaN; past a day, nanoseconds overflow in C++
        raise UsageError(f"madvise_interval_s must lie in 0..{MOST_MADVISE_INTERVAL_S} seconds, got {madvise_interval_s}")
    ordinal = _device_ordinal(device)
    manager = manager or ("resident" if ordinal >= 0 else "user")
    options = dict(steps=steps, step_size=step_size, integrator=integrator, direction=direction, manager=manager,
                   device=device, threads=threads, frame=frame, cache_bytes=cache_bytes, banks=banks, direct=direct,
                   unit_pages=unit_pages, madvise_interval_s=madvise_interval_s,
                   memory_budget_bytes=memory_budget_bytes, backend=backend, progress=progress, **tuning)
    path = _path(source)
    if not _traced_as_is(path, field):
        fit = None if manager == "mmap" else int(cache_bytes)
        with traceable(path, say, field=field, cache_bytes=fit, banks=int(banks)) as flow:
            result = trace_run(flow, seeds, **options)  # type: ignore[arg-type]
            result.sampled = result.velocities(threads)
        result.stats["file"] = path
        return result
    if manager in ("user", "resident"):
        _expect_cache_holds(path, manager, int(cache_bytes), int(banks), int(unit_pages), int(frame))
    run = _ext.trace_container(path, _as_seeds(seeds), frame=int(frame), integrator=integrator,
                               direction=direction, step_size=float(step_size), max_steps=int(steps), manager=manager,
                               threads=int(threads), cache_bytes=int(cache_bytes), banks=int(banks), direct=bool(direct),
                               unit_pages=int(unit_pages), madvise_interval_s=float(madvise_interval_s),
                               memory_budget_bytes=int(memory_budget_bytes), device=ordinal, backend=backend,
                               progress=progress, **tuning)
    stats = {k: v for k, v in run.items() if k not in ("points", "offsets", "ends", "times")}
    stats.update(manager=manager, device="cpu" if ordinal < 0 else ordinal, threads=threads, seeds=len(run["ends"]),
                 points=len(run["points"]), file=path, frame=int(frame), direction=direction)
    return TraceResult(run["points"], run["offsets"], list(run["ends"]), stats, run["times"])


def _expect_cache_holds(path: str, manager: str, cache_bytes: int, banks: int, unit_pages: int, frame: int) -> None:
    """A ``UsageError`` naming the smallest ``--cache-bytes`` that works when the cache cannot hold the units a
    trace needs: one per bank (``user``), the corners of a cell (``resident``: 8, or every unit there is)."""
    import headrace

    ds = headrace.open(path)
    layout = ds.attributes.get("layout")
    dims = [int(d) for d in ds.attributes.get("grid_dims", [])]
    if len(dims) != 3 or frame >= len(ds.frames):
        return  # the tracer says what is wrong
    if layout == "blocks":
        unit = [int(b) for b in ds.attributes.get("block_dims", [])]
        if len(unit) != 3 or min(unit) < 1:
            return
        unit_bytes = _POINT_BYTES * int(np.prod(unit))
        units = int(np.prod([-(-d // b) for d, b in zip(dims, unit)]))
        what, fix = f"of {_sides(unit)} points ({unit_bytes:,} bytes)", "smaller blocks (headrace convert --block)"
    else:
        unit_bytes = unit_pages * 4096
        units = -(-ds.element_count(frame, "velocity") * _POINT_BYTES // unit_bytes)
        what, fix = f"of {unit_pages} pages", "smaller units (--unit-pages)"
    needed = banks if manager == "user" else min(UNITS_NEEDED, units)
    held = cache_bytes // unit_bytes
    if held < needed:
        why = f"one per bank (--banks {banks})" if manager == "user" else "the corners of a cell"
        unit_name = "block" if layout == "blocks" else "unit"
        raise UsageError(f"{path}: --cache-bytes {cache_bytes:,} holds {held} {unit_name}{'s' if held != 1 else ''} {what}; "
                         f"the {manager} cache needs {needed}, "
                         f"{why}: --cache-bytes {needed * unit_bytes} or more, or {fix}")


def _device_ordinal(device: int | str | None) -> int:
    if device is None or device == "cpu":
        return -1
    try:
        ordinal = int(device)
    except (TypeError, ValueError):
        raise UsageError(f"device {device!r}: expected cpu or a GPU ordinal") from None
    if ordinal < 0:
        raise UsageError(f"device {device!r}: expected cpu or a GPU ordinal (0, 1, ...)")
    return ordinal


def distribution(source: Any, asked: str, cache_bytes: int, frame: int = 0) -> str:
    """How a job of several ranks shares the field: ``asked`` (:data:`DISTRIBUTIONS`); ``auto`` hands lines
    off when the frame's velocity does not fit one rank's cache and the file holds native blocks (a Hilbert
    unit has no neighbours to hold), and replicates otherwise."""
    import headrace

    if asked not in DISTRIBUTIONS:
        raise UsageError(f"distribution {asked!r}: expected one of {', '.join(DISTRIBUTIONS)}")
    ds = headrace.open(_path(source))
    layout = ds.attributes.get("layout")
    if asked == "hand-off" and layout != "blocks":
        raise UsageError(f"{ds.path}: handing lines off needs native blocks (layout {layout!r} here): convert it with "
                         "--layout blocks, or replicate")
    if asked != "auto":
        return asked
    table = ds.container.chunk_table()
    velocity = ds.container.field_index("velocity")
    raw = int(table["raw_size"][(table["frame"] == frame) & (table["field"] == velocity)].sum())
    return "hand-off" if layout == "blocks" and raw > cache_bytes else "replicate"


def trace_handed(source: Any, seeds: Any, *, steps: int = 1000, step_size: float = 0.01, integrator: str = "rk4",
                 direction: str = "forward", device: int | str | None = "cpu", threads: int = 0, frame: int = 0,
                 cache_bytes: int = 1 << 30, backend: str = "uring", **tuning: float) -> TraceResult | None:
    """Every seed traced by the ranks of the job (under MPI; one process is a job of one rank), lines handed
    between them: each rank starts its block of the seeds and holds its planes of blocks along z and their
    neighbours (at most ``cache_bytes``) in ``device``'s memory; rounds of stepping alternate with an
    all-to-all of the lines that wait for a block held elsewhere, until no rank holds one. The lines on
    rank 0 (None elsewhere): one tracer's, bit for bit. Stats: the slowest rank's seconds, lines handed."""
    import time

    from headrace.distributed import ranks

    job = ranks()
    seeds = _as_seeds(seeds)
    ordinal = _device_ordinal(device)
    tracer = _ext.HandOffTrace(_path(source), job.rank, job.size, frame=int(frame), integrator=integrator,
                               direction=direction, step_size=float(step_size), max_steps=int(steps), threads=int(threads),
                               cache_bytes=int(cache_bytes), device=ordinal, backend=backend, **tuning)
    share = job.frames_of(len(seeds))
    if share:
        tracer.start(np.ascontiguousarray(seeds[share]), share[0])
    job.barrier()
    started = time.perf_counter()
    handed = exchanges = 0
    while True:
        leaving, to = tracer.run()
        handed += len(to)
        if job.comm is None:  # one rank holds every block: no line leaves
            break
        for part in job.comm.alltoall([leaving[to == r] for r in range(job.size)]):
            if len(part):
                tracer.add(part)
        exchanges += 1
        if job.comm.allreduce(tracer.held) == 0:
            break
    seconds = time.perf_counter() - started
    mine = tracer.result()
    everyone = job.gather({**mine, "handed": handed, "seconds": seconds})
    if not job.root:
        return None
    assert everyone is not None
    run = _ext.assemble_handed(seeds, direction, int(steps), *(np.concatenate([r[k] for r in everyone])
                                                                for k in ("ended", "segments", "points")))
    stats = {"seconds": max(r["seconds"] for r in everyone), "layout": "blocks", "manager": "hand-off",
             "device": "cpu" if ordinal < 0 else ordinal, "threads": threads, "seeds": len(seeds),
             "points": len(run["points"]), "file": _path(source), "frame": int(frame), "direction": direction,
             "ranks": job.size, "lines_handed": sum(r["handed"] for r in everyone), "exchanges": exchanges,
             "resident_rounds": max(r["rounds"] for r in everyone), "bytes_read": sum(r["bytes_read"] for r in everyone),
             "resident_blocks": [r["resident_blocks"] for r in everyone],
             "resident_load_seconds": max(r["load_seconds"] for r in everyone),
             "resident_advance_seconds": max(r["advance_seconds"] for r in everyone)}
    return TraceResult(run["points"], run["offsets"], list(run["ends"]), stats, run["times"])


def trace(source: Any, seeds: Any, **options: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(points, offsets)`` of the streamlines from ``seeds``; :func:`trace_run` keeps the statistics too."""
    result = trace_run(source, seeds, **options)
    return result.points, result.offsets


def grid_of(source: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dims, origin, spacing)`` of a flow container's grid, from its attributes."""
    import headrace

    ds = headrace.open(_path(source)) if not hasattr(source, "attributes") else source
    attributes = ds.attributes
    try:
        return (np.asarray(attributes["grid_dims"], dtype=np.int64), np.asarray(attributes["grid_origin"], dtype=np.float64),
                np.asarray(attributes["grid_spacing"], dtype=np.float64))
    except KeyError as missing:
        raise UsageError(f"{_path(source)}: not a grid (no attribute {missing})") from None


def uniform_seeds(source: Any, count: int) -> np.ndarray:
    """About ``count`` seeds on a lattice over the grid, the same spacing along every axis, each at the
    centre of its lattice cell (seed 002's uniform seeding, by count)."""
    if count < 1:
        raise UsageError(f"uniform seeding needs a count of at least 1, got {count}")
    dims, origin, spacing = grid_of(source)
    extent = (dims - 1) * spacing
    step = float(np.cbrt(np.prod(extent) / count))
    per_axis = np.maximum(1, np.round(extent / step)).astype(int)
    axes = [origin[a] + (np.arange(per_axis[a]) + 0.5) * extent[a] / per_axis[a] for a in range(3)]
    z, y, x = np.meshgrid(axes[2], axes[1], axes[0], indexing="ij")
    return np.stack([x.ravel(), y.ravel(), z.ravel()], axis=1).astype(np.float32)


def rake_seeds(start: Any, end: Any, count: int) -> np.ndarray:
    """``count`` seeds evenly spaced on the segment from ``start`` to ``end`` (both included)."""
    if count < 1:
        raise UsageError(f"a rake needs at least one seed, got {count}")
    t = np.linspace(0.0, 1.0, count) if count > 1 else np.zeros(1)
    a, b = np.asarray(start, dtype=np.float64), np.asarray(end, dtype=np.float64)
    return (a[None, :] + t[:, None] * (b - a)[None, :]).astype(np.float32)


def feature_seeds(source: Any, low: float, high: float = float("inf"), *, stride: int = 1, frame: int = 0,
                  threads: int = 0) -> np.ndarray:
    """Seed 002's feature-based seeding: the interior grid points (every ``stride``-th along each axis)
    whose vorticity magnitude lies in ``[low, high)``, x fastest."""
    return _ext.feature_seeds(_path(source), float(low), float(high), int(stride), int(frame), int(threads))


def load_seeds(path: os.PathLike | str) -> np.ndarray:
    """An (N, 3) float array of world coordinates saved with ``numpy.save``."""
    return _as_seeds(np.load(path))


# ParaView's codes for why a line ended (vtkStreamTracer's ReasonForTermination); "stopped" (a time
# budget) has none there and is 0.
TERMINATION_CODES = {"left_domain": 1, "max_steps": 5, "stagnant": 6, "stopped": 0}

_VTK_TYPES = {np.dtype("float32"): "Float32", np.dtype("int64"): "Int64", np.dtype("int32"): "Int32"}


def _vtp(points: np.ndarray, offsets: np.ndarray, point_data: dict[str, np.ndarray],
         line_data: dict[str, np.ndarray]) -> bytes:
    """VTK XML PolyData with the lines and their point and cell (line) data, appended raw (UInt64
    headers): ParaView opens it."""
    connectivity = np.arange(len(points), dtype=np.int64)
    ends = offsets[1:].astype(np.int64)
    arrays: list[np.ndarray] = [np.ascontiguousarray(points, dtype=np.float32), connectivity, ends,
                                *point_data.values(), *line_data.values()]
    head: list[int] = []
    body, at = b"", 0
    for array in arrays:
        raw = np.ascontiguousarray(array).tobytes()
        head.append(at)
        body += np.uint64(len(raw)).tobytes() + raw
        at += 8 + len(raw)

    def described(data: dict[str, np.ndarray], first: int) -> str:
        return "".join(
            f'<DataArray type="{_VTK_TYPES[array.dtype]}" Name="{name}" '
            f'NumberOfComponents="{array.shape[1] if array.ndim == 2 else 1}" format="appended" offset="{head[first + n]}"/>\n'
            for n, (name, array) in enumerate(data.items()))

    vectors = next((f' Vectors="{name}"' for name, array in point_data.items() if array.ndim == 2), "")
    xml = (
        '<?xml version="1.0"?>\n'
        '<VTKFile type="PolyData" version="1.0" byte_order="LittleEndian" header_type="UInt64">\n'
        "<PolyData>\n"
        f'<Piece NumberOfPoints="{len(points)}" NumberOfLines="{len(ends)}">\n'
        + (f"<PointData{vectors}>\n{described(point_data, 3)}</PointData>\n" if point_data else "")
        + (f"<CellData>\n{described(line_data, 3 + len(point_data))}</CellData>\n" if line_data else "")
        + f'<Points><DataArray type="Float32" NumberOfComponents="3" format="appended" offset="{head[0]}"/></Points>\n'
        "<Lines>\n"
        f'<DataArray type="Int64" Name="connectivity" format="appended" offset="{head[1]}"/>\n'
        f'<DataArray type="Int64" Name="offsets" format="appended" offset="{head[2]}"/>\n'
        "</Lines>\n</Piece>\n</PolyData>\n"
        '<AppendedData encoding="raw">\n_'
    )
    return xml.encode() + body + b"\n</AppendedData>\n</VTKFile>\n"


def write_lines(path: os.PathLike | str, points: np.ndarray, offsets: np.ndarray, *,
                point_data: dict[str, np.ndarray] | None = None, line_data: dict[str, np.ndarray] | None = None,
                **extra: Any) -> Path:
    """Writes ``.npz`` (``points``, ``offsets``, the ``point_data`` and ``line_data`` arrays by name, and
    ``extra`` arrays) or ``.vtp`` (point data and cell data, one cell a line) through a temporary file and
    rename, so a failure leaves nothing."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".npz", ".vtp"):
        raise UsageError(f"{path}: streamlines are written as .npz or .vtp, not {suffix or 'no extension'}")
    point_data, line_data = dict(point_data or {}), dict(line_data or {})
    with replacing(path) as partial:
        with open(partial, "wb") as out:
            if suffix == ".npz":
                arrays: dict[str, Any] = {"points": np.asarray(points, dtype=np.float32),
                                          "offsets": np.asarray(offsets, dtype=np.int64), **point_data, **line_data, **extra}
                np.savez(out, **arrays)
            else:
                out.write(_vtp(np.asarray(points), np.asarray(offsets), point_data, line_data))
            out.flush()
            os.fsync(out.fileno())
    return path


def write_traced(path: os.PathLike | str, result: TraceResult, threads: int = 0) -> Path:
    """Writes a trace's lines with what ParaView's stream tracer gives them: per point
    ``IntegrationTime``, the sampled ``Velocity`` vectors and their magnitude ``Speed``; per line
    ``SeedIds`` and ``ReasonForTermination`` (ParaView's codes, :data:`TERMINATION_CODES`; the forward
    end, or the backward end of a backward trace; ``BackwardReasonForTermination`` too when both
    directions were traced). An ``.npz`` also keeps ``ends``, the reasons as text."""
    velocities = result.velocities(threads)
    direction = result.stats.get("direction", "forward")
    backward_ends = [end.split("/")[0] for end in result.ends]
    forward_ends = [end.split("/")[-1] for end in result.ends]

    def codes(ends: list[str]) -> np.ndarray:
        return np.array([TERMINATION_CODES[end] for end in ends], dtype=np.int32)

    line_data = {"SeedIds": np.arange(len(result.ends), dtype=np.int64),
                 "ReasonForTermination": codes(backward_ends if direction == "backward" else forward_ends)}
    if direction == "both":
        line_data["BackwardReasonForTermination"] = codes(backward_ends)
    point_data = {"IntegrationTime": np.asarray(result.times, dtype=np.float32),
                  "Velocity": velocities, "Speed": np.linalg.norm(velocities, axis=1).astype(np.float32)}
    extra = {"ends": np.array(result.ends)} if Path(path).suffix.lower() == ".npz" else {}
    return write_lines(path, result.points, result.offsets, point_data=point_data, line_data=line_data, **extra)


DEFAULT_HILBERT_BITS = 6  # partitions of 64 points a side when none is asked for


def fitted_hilbert_bits(dims: Sequence[int], bits: int | None = None, *, label: str = "the flow",
                        say: Callable[[str], None] | None = None) -> int:
    """Hilbert partitions of ``2**bits`` points a side for a grid of ``dims``: ``bits`` when it fits (a
    partition no larger than the grid's largest side), else a ``UsageError`` naming ``--hilbert-bits`` and
    the largest value that fits; ``None``: :data:`DEFAULT_HILBERT_BITS`, or the largest that fits a smaller
    grid, told to ``say`` (default: a :class:`TraceNote` warning)."""
    largest = max(int(d) for d in dims)
    fits = max(1, largest.bit_length() - 1)  # 2**fits <= largest side (a grid has 2 or more points a side)
    if bits is None:
        if fits < DEFAULT_HILBERT_BITS:
            (say or _warn)(f"{label}: Hilbert partitions of {1 << fits} points a side (--hilbert-bits {fits}), the "
                           f"largest that fit its {_sides(dims)} grid (the default is {1 << DEFAULT_HILBERT_BITS})")
            return fits
        return DEFAULT_HILBERT_BITS
    if not 1 <= bits <= fits:
        raise UsageError(f"{label}: Hilbert partitions of {1 << bits} points a side do not fit its {_sides(dims)} grid "
                         f"(no larger than its largest side, {largest}): --hilbert-bits {fits} or less")
    return int(bits)


def convert_to_hilbert(source: os.PathLike | str, output: os.PathLike | str, *, bits: int | None = None,
                       chunk_pages: int = 96, progress: Any = None, say: Callable[[str], None] | None = None) -> float:
    """Rewrites a native-block flow container in the Hilbert layout (partitions of 2**bits points a side,
    :func:`fitted_hilbert_bits`; chunks of ``chunk_pages`` pages, a multiple of 3); returns the seconds it
    took."""
    dims, _, _ = grid_of(source)
    bits = fitted_hilbert_bits([int(d) for d in dims], bits, label=os.fspath(source), say=say)
    return _ext.convert_blocks_to_hilbert(os.fspath(source), os.fspath(output), int(bits), int(chunk_pages), progress)


def convert_linear_flow(source: os.PathLike | str, output: os.PathLike | str, *, layout: str, block: Any = None,
                        bits: int | None = None, chunk_pages: int = 96, field: str | Sequence[str] | None = None,
                        say: Callable[[str], None] | None = None) -> float:
    """Rewrites a flow field stored in grid order (``layout = "linear"``: a grid ``headrace convert`` made)
    in native blocks of ``block`` points or in the Hilbert layout (:func:`fitted_hilbert_bits`); one frame
    at a time in memory. Returns the seconds it took. The velocity is ``field`` (:func:`velocity_of`: one
    field of 3 components or three scalar fields, of any floating type), stored as ``velocity``, float32
    x 3 (a cast said to ``say``, default a :class:`TraceNote` warning)."""
    import time

    import headrace
    from headrace.generate.flow import TARGET_CHUNK_BYTES, to_blocks

    started = time.perf_counter()
    ds = headrace.open(source)
    if ds.attributes.get("layout", "linear") != "linear" or "grid_dims" not in ds.attributes:
        raise UsageError(f"{source}: expected a grid in grid order (layout 'linear'); blocks go through "
                         "convert_to_hilbert")
    names = velocity_of(ds, field)
    dtype = _velocity_dtype(ds, names)
    if dtype != "float32":
        (say or _warn)(f"{source}: velocity is {dtype}: stored as float32")
    nx, ny, nz = (int(d) for d in ds.attributes["grid_dims"])
    attributes = {k: v for k, v in ds.attributes.items() if k != "layout"}
    arrange: Callable[[np.ndarray], np.ndarray]  # a frame's (Z, Y, X, 3) grid -> its values in the new layout
    if layout == "blocks":
        block = tuple(int(b) for b in block or default_block((nx, ny, nz)))
        if len(block) != 3 or min(block) < 1 or any(b > d for b, d in zip(block, (nx, ny, nz))):
            raise UsageError(f"--block {list(block)}: three sizes from 1 to the grid's {[nx, ny, nz]} (partial blocks at "
                             "the edges are fine)")
        block_bytes = _POINT_BYTES * block[0] * block[1] * block[2]
        chunk_bytes = max(1, TARGET_CHUNK_BYTES // block_bytes) * block_bytes  # whole blocks, as generate flow writes
        attributes.update(layout="blocks", block_dims=list(block))
        arrange = partial(to_blocks, block=block)
    elif layout == "hilbert":
        bits = fitted_hilbert_bits((nx, ny, nz), bits, label=os.fspath(source), say=say)
        side = 1 << bits
        if chunk_pages < 3 or chunk_pages % 3:
            raise UsageError(f"Hilbert chunks are a multiple of 3 pages (12 KiB holds 1024 whole points), got {chunk_pages}")
        order = _ext.hilbert_order(bits)
        chunk_bytes = chunk_pages * 4096
        attributes.update(layout="hilbert", hilbert_bits=[bits])
        arrange = partial(_hilbert_ordered, side=side, order=order)
    else:
        raise UsageError(f"layout {layout!r}: expected blocks or hilbert")
    with headrace.Writer(output, [headrace.FieldSpec("velocity", "float32", 3)], chunk_size_bytes=chunk_bytes) as writer:
        for key, value in attributes.items():
            writer.set_attribute(key, value)
        for frame in ds.frames:
            values = arrange(_velocity_grid(ds, frame.index, names, (nz, ny, nx)))
            writer.write(writer.add_frame(time=frame.time, bbox=frame.bbox), "velocity", np.ascontiguousarray(values))
    return time.perf_counter() - started


def _hilbert_ordered(grid: np.ndarray, side: int, order: np.ndarray) -> np.ndarray:
    """A (Z, Y, X, 3) grid's values in partitions of ``side`` points a side (x fastest), each in
    ``order`` (the Hilbert curve's)."""
    from headrace.generate.flow import padded_to

    grid = padded_to(grid, (side, side, side))  # partial partitions at the far edges, stored whole
    nz, ny, nx, _ = grid.shape
    cubes = grid.reshape(nz // side, side, ny // side, side, nx // side, side, 3).transpose(0, 2, 4, 1, 3, 5, 6)
    return cubes.reshape(-1, side**3, 3)[:, order, :].reshape(-1, 3)  # partitions x fastest, curve order
