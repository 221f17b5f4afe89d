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
from collections.abc import Iterator
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
           "MOST_MADVISE_INTERVAL_S"]

MOST_MADVISE_INTERVAL_S = 86400  # a day between madvise calls at most

TRACED_LAYOUTS = ("blocks", "hilbert")
DISTRIBUTIONS = ("auto", "replicate", "hand-off")


@contextmanager
def traceable(source: os.PathLike | str, say: Callable[[str], None] | None = None) -> Iterator[str]:
    """A path the tracer reads: ``source`` itself when it is a flow container in native blocks or the
    Hilbert layout; else, for a flow field in grid order (a container of ``layout = "linear"``, or a BOV
    or ``.npy`` file that ``headrace convert`` reads), a container in native blocks of
    :func:`default_block` made in a temporary folder for as long as the ``with`` lasts. ``say`` is told
    once what was made and how to skip it next time."""
    import tempfile
    import time

    import headrace
    from headrace.convert import convert

    path = os.fspath(_path(source))
    try:
        layout = headrace.open(path).attributes.get("layout")
    except errors.BadMagicError:  # not a container: a file headrace convert reads
        layout = None
    if layout in TRACED_LAYOUTS:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="headrace-trace-") as folder:
        started = time.perf_counter()
        linear = path
        if layout is None:
            linear = os.fspath(convert(path, Path(folder) / "grid.hrc"))
        elif layout != "linear":
            raise UsageError(f"{path}: expected a flow field (layout blocks, hilbert or linear), found layout {layout!r}")
        blocks = Path(folder) / "blocks.hrc"
        convert_linear_flow(linear, blocks, layout="blocks")
        if say is not None:
            block = "x".join(str(side) for side in headrace.open(blocks).attributes["block_dims"])
            say(f"{path}: a flow field in grid order, traced through native blocks of {block} points made in a "
                f"temporary file ({time.perf_counter() - started:.1f} s); `headrace convert {path} FLOW.hrc --layout "
                "blocks` makes them once")
        yield os.fspath(blocks)


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
        return cls(np.concatenate([p.points for p in parts]) if parts else np.zeros((0, 3), np.float32),
                   np.concatenate(offsets).astype(parts[0].offsets.dtype if parts else np.int64),
                   [end for p in parts for end in p.ends], stats,
                   np.concatenate([p.times for p in parts]) if parts else np.zeros(0, np.float32))

    def velocities(self, threads: int = 0) -> np.ndarray:
        """The flow's velocity at every point, trilinear as the tracer sampled it ((N, 3) float32): the
        vectors ParaView colours lines by. Read from the traced file through a mapping."""
        return _ext.sample_flow(self.stats["file"], np.ascontiguousarray(self.points, dtype=np.float32),
                                int(self.stats.get("frame", 0)), int(threads))


def _path(source: Any) -> str:
    return os.fspath(getattr(source, "path", source))


def _as_seeds(seeds: Any) -> np.ndarray:
    array = np.ascontiguousarray(seeds, dtype=np.float32)
    if array.ndim != 2 or array.shape[1] != 3 or array.shape[0] == 0:
        raise UsageError(f"seeds must be an (N, 3) array of world coordinates with N >= 1, got shape {array.shape}")
    return array


def trace_run(source: Any, seeds: Any, *, steps: int = 1000, step_size: float = 0.01, integrator: str = "rk4",
              direction: str = "forward", manager: str | None = None, device: int | str | None = "cpu",
              threads: int = 0, frame: int = 0, cache_bytes: int = 1 << 30, banks: int = 1, direct: bool = False,
              unit_pages: int = 96, madvise_interval_s: float = 4.0, memory_budget_bytes: int = 0,
              backend: str = "uring", progress: Callable[[int, int], bool] | None = None,
              **tuning: float) -> TraceResult:
    """Traces every seed; see the module docstring. ``tuning``: stagnant_speed, tolerance, min_step, max_step.

    ``progress(ended, lines)`` is called now and then with the lines ended so far; returning False
    stops the run: every seed still has its line, and those cut short end ``"stopped"`` (in ``ends``)
    with the points they had."""
    if not 0 <= madvise_interval_s <= MOST_MADVISE_INTERVAL_S:  # also NaN; past a day, nanoseconds overflow in C++
        raise UsageError(f"madvise_interval_s must lie in 0..{MOST_MADVISE_INTERVAL_S} seconds, got {madvise_interval_s}")
    ordinal = _device_ordinal(device)
    manager = manager or ("resident" if ordinal >= 0 else "user")
    run = _ext.trace_container(_path(source), _as_seeds(seeds), frame=int(frame), integrator=integrator,
                               direction=direction, step_size=float(step_size), max_steps=int(steps), manager=manager,
                               threads=int(threads), cache_bytes=int(cache_bytes), banks=int(banks), direct=bool(direct),
                               unit_pages=int(unit_pages), madvise_interval_s=float(madvise_interval_s),
                               memory_budget_bytes=int(memory_budget_bytes), device=ordinal, backend=backend,
                               progress=progress, **tuning)
    stats = {k: v for k, v in run.items() if k not in ("points", "offsets", "ends", "times")}
    stats.update(manager=manager, device="cpu" if ordinal < 0 else ordinal, threads=threads, seeds=len(run["ends"]),
                 points=len(run["points"]), file=_path(source), frame=int(frame), direction=direction)
    return TraceResult(run["points"], run["offsets"], list(run["ends"]), stats, run["times"])


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


def convert_to_hilbert(source: os.PathLike | str, output: os.PathLike | str, *, bits: int = 6, chunk_pages: int = 96,
                       progress: Any = None) -> float:
    """Rewrites a native-block flow container in the Hilbert layout (partitions of 2**bits points a side,
    chunks of ``chunk_pages`` pages, a multiple of 3); returns the seconds it took."""
    return _ext.convert_blocks_to_hilbert(os.fspath(source), os.fspath(output), int(bits), int(chunk_pages), progress)




def convert_linear_flow(source: os.PathLike | str, output: os.PathLike | str, *, layout: str, block: Any = None,
                        bits: int = 6, chunk_pages: int = 96, field: str | None = None) -> float:
    """Rewrites a flow field stored in grid order (``layout = "linear"``: a BOV brick converted with
    ``headrace convert``) in native blocks of ``block`` points or in the Hilbert layout; one frame at a
    time in memory. Returns the seconds it took. The field is renamed ``velocity``."""
    import time

    import headrace
    from headrace.generate.flow import TARGET_CHUNK_BYTES, to_blocks

    started = time.perf_counter()
    ds = headrace.open(source)
    if ds.attributes.get("layout") != "linear":
        raise UsageError(f"{source}: expected a grid in grid order (layout 'linear'); blocks go through "
                         "convert_to_hilbert")
    name = field or ds.fields[0].name
    info = ds.field(name)
    if info.dtype != "float32" or info.components != 3:
        raise UsageError(f"{source}: field {name!r} is {info.dtype} x {info.components}; a velocity is float32 x 3")
    nx, ny, nz = (int(d) for d in ds.attributes["grid_dims"])
    attributes = {k: v for k, v in ds.attributes.items() if k != "layout"}
    arrange: Callable[[np.ndarray], np.ndarray]  # a frame's (Z, Y, X, 3) grid -> its values in the new layout
    if layout == "blocks":
        block = tuple(int(b) for b in block or default_block((nx, ny, nz)))
        if len(block) != 3 or min(block) < 1 or any(b > d for b, d in zip(block, (nx, ny, nz))):
            raise UsageError(f"--block {list(block)}: three sizes from 1 to the grid's {[nx, ny, nz]} (partial blocks at "
                             "the edges are fine)")
        block_bytes = 12 * block[0] * block[1] * block[2]
        chunk_bytes = max(1, TARGET_CHUNK_BYTES // block_bytes) * block_bytes  # whole blocks, as generate flow writes
        attributes.update(layout="blocks", block_dims=list(block))
        arrange = partial(to_blocks, block=block)
    elif layout == "hilbert":
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
            values = arrange(ds.read(frame.index, name).reshape(nz, ny, nx, 3))
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
