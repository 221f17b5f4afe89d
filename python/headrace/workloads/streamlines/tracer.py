"""Tracing streamlines from seeds through a flow container on one rank: :func:`trace_run` (the lines
and what the run did, a :class:`TraceResult`) and :func:`trace` (the lines alone)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import headrace
from headrace import _ext
from headrace.errors import UsageError
from headrace.workloads.streamlines.flow import POINT_BYTES, path_of, sides_text
from headrace.workloads.streamlines.layouts import UNITS_NEEDED
from headrace.workloads.streamlines.seeds import as_seeds
from headrace.workloads.streamlines.traceable import traced_as_is, traceable

__all__ = ["MOST_MADVISE_INTERVAL_S", "TraceResult", "default_manager", "trace_run", "trace", "joined_offsets", "joined_stats"]


MOST_MADVISE_INTERVAL_S = 86400  # a day between madvise calls at most


# How the counters of runs over blocks of seeds make those of one run: counts add up, times are the slowest's.
_ADDED_UP = ("seeds", "points", "bytes_read", "cache_hits", "cache_misses", "cache_evictions", "madvise_calls",
             "budget_drops", "resident_rounds", "resident_units_loaded", "resident_evictions")
_SLOWEST = ("seconds", "resident_load_seconds", "resident_advance_seconds")


def joined_offsets(offsets: list[np.ndarray], points: list[int]) -> np.ndarray:
    """The offsets of runs' lines (each starting at 0, over ``points[r]`` points) as those of one array of them
    all, back to back in run order."""
    bases = np.cumsum([0, *points[:-1]])
    return np.concatenate([np.zeros(1, np.int64), *(np.asarray(o[1:], np.int64) + b for o, b in zip(offsets, bases))])


def joined_stats(stats: list[dict[str, Any]], added: tuple[str, ...], slowest: tuple[str, ...]) -> dict[str, Any]:
    """Runs' statistics as one run's: the first's, those ``added`` summed, those ``slowest`` the largest, and
    every run's under ``"parts"``."""
    joined = dict(stats[0]) if stats else {}
    for key in added:
        if key in joined:
            joined[key] = sum(s.get(key, 0) for s in stats)
    for key in slowest:
        if key in joined:
            joined[key] = max(s.get(key, 0.0) for s in stats)
    joined["parts"] = stats
    return joined


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
    # Or being sampled by the GPU tracer, which holds its cache until they are taken (velocities()).
    pending: Any = field(default=None, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        """What pickling (a rank's lines sent to rank 0) takes: the velocities, once sampled, not their sampling."""
        self.velocities()
        return {**self.__dict__, "pending": None}

    @classmethod
    def joined(cls, parts: list[TraceResult]) -> TraceResult:
        """The lines of several runs over consecutive blocks of seeds (the ranks of a job, in order) as one run
        over all of them: what one run over every seed gives. Stats: the first part's, its counts summed, the
        slowest part's seconds, and every part's under ``"parts"``."""
        offsets = joined_offsets([p.offsets for p in parts], [len(p.points) for p in parts])
        stats = joined_stats([p.stats for p in parts], _ADDED_UP, _SLOWEST)
        sampled = [p.velocities() for p in parts if p.pending is not None or p.sampled is not None]
        return cls(np.concatenate([p.points for p in parts]) if parts else np.zeros((0, 3), np.float32),
                   offsets.astype(parts[0].offsets.dtype if parts else np.int64),
                   [end for p in parts for end in p.ends], stats,
                   np.concatenate([p.times for p in parts]) if parts else np.zeros(0, np.float32),
                   np.concatenate(sampled) if parts and len(sampled) == len(parts) else None)

    def velocities(self, threads: int = 0) -> np.ndarray:
        """The flow's velocity at every point, trilinear as the tracer sampled it ((N, 3) float32): the
        vectors ParaView colours lines by. Read from the traced file through a mapping (or kept from the
        run, where it traced blocks made on the fly)."""
        if self.pending is not None:  # the tracer's, waited for once; None when its cache could not hold a cell
            self.sampled, self.stats["velocity_seconds"] = self.pending.result()
            self.pending = None
        if self.sampled is not None:
            return self.sampled
        return _ext.sample_flow(self.stats["file"], np.ascontiguousarray(self.points, dtype=np.float32),
                                int(self.stats.get("frame", 0)), int(threads))


def default_manager(banks: int = 1, direct: bool = False) -> str:
    """The data manager a trace gets when none is named: the resident rounds, on a GPU or on CPU threads
    (the same lines; on 16 CPU threads 24 x faster than the user cache's locked LRU, docs/results.md), or the
    user cache when its own options (more banks, O_DIRECT) ask for it."""
    return "user" if banks != 1 or direct else "resident"


def trace_run(source: Any, seeds: Any, *, field: str | Sequence[str] | None = None, steps: int = 1000,
              step_size: float = 0.01, integrator: str = "rk4", direction: str = "forward", manager: str | None = None,
              device: int | str | None = "cpu", threads: int = 0, frame: int = 0, cache_bytes: int = 1 << 30,
              banks: int = 1, direct: bool = False, unit_pages: int = 96, madvise_interval_s: float = 4.0,
              memory_budget_bytes: int = 0, backend: str = "auto", progress: Callable[[int, int], bool] | None = None,
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
    ordinal = device_ordinal(device)
    manager = manager or default_manager(banks, direct)
    options = dict(steps=steps, step_size=step_size, integrator=integrator, direction=direction, manager=manager,
                   device=device, threads=threads, frame=frame, cache_bytes=cache_bytes, banks=banks, direct=direct,
                   unit_pages=unit_pages, madvise_interval_s=madvise_interval_s,
                   memory_budget_bytes=memory_budget_bytes, backend=backend, progress=progress, **tuning)
    path = path_of(source)
    if not traced_as_is(path, field):
        fit = None if manager == "mmap" else int(cache_bytes)
        with traceable(path, say, field=field, cache_bytes=fit, banks=int(banks)) as flow:
            result = trace_run(flow, seeds, **options)  # type: ignore[arg-type]
            result.sampled = result.velocities(threads)
        result.stats["file"] = path
        return result
    if manager in ("user", "resident"):
        _expect_cache_holds(path, manager, int(cache_bytes), int(banks), int(unit_pages), int(frame))
    run = _ext.trace_container(path, as_seeds(seeds), frame=int(frame), integrator=integrator,
                               direction=direction, step_size=float(step_size), max_steps=int(steps), manager=manager,
                               threads=int(threads), cache_bytes=int(cache_bytes), banks=int(banks), direct=bool(direct),
                               unit_pages=int(unit_pages), madvise_interval_s=float(madvise_interval_s),
                               memory_budget_bytes=int(memory_budget_bytes), device=ordinal, backend=backend,
                               progress=progress, velocities=ordinal >= 0, **tuning)
    # A GPU samples the lines' velocities through its cache (milliseconds, where the file's mapping takes
    # most of a second for 8 M points), meanwhile: they are written last; the CPU leaves them to write
    # time, through the mapping.
    stats = {k: v for k, v in run.items() if k not in ("points", "offsets", "ends", "times", "velocities")}
    stats.update(manager=manager, device="cpu" if ordinal < 0 else ordinal, threads=threads, seeds=len(run["ends"]),
                 points=len(run["points"]), file=path, frame=int(frame), direction=direction)
    return TraceResult(run["points"], run["offsets"], list(run["ends"]), stats, run["times"],
                       pending=run.get("velocities"))


def _expect_cache_holds(path: str, manager: str, cache_bytes: int, banks: int, unit_pages: int, frame: int) -> None:
    """A ``UsageError`` naming the smallest ``--cache-bytes`` that works when the cache cannot hold the units a
    trace needs: one per bank (``user``), the corners of a cell (``resident``: 8, or every unit there is)."""
    ds = headrace.open(path)
    layout = ds.attributes.get("layout")
    dims = [int(d) for d in ds.attributes.get("grid_dims", [])]
    if len(dims) != 3 or frame >= len(ds.frames):
        return  # the tracer says what is wrong
    if layout == "blocks":
        unit = [int(b) for b in ds.attributes.get("block_dims", [])]
        if len(unit) != 3 or min(unit) < 1:
            return
        unit_bytes = POINT_BYTES * int(np.prod(unit))
        units = int(np.prod([-(-d // b) for d, b in zip(dims, unit)]))
        what, fix = f"of {sides_text(unit)} points ({unit_bytes:,} bytes)", "smaller blocks (headrace convert --block)"
    else:
        unit_bytes = unit_pages * 4096
        units = -(-ds.element_count(frame, "velocity") * POINT_BYTES // unit_bytes)
        what, fix = f"of {unit_pages} pages", "smaller units (--unit-pages)"
    needed = banks if manager == "user" else min(UNITS_NEEDED, units)
    held = cache_bytes // unit_bytes
    if held < needed:
        why = f"one per bank (--banks {banks})" if manager == "user" else "the corners of a cell"
        unit_name = "block" if layout == "blocks" else "unit"
        raise UsageError(f"{path}: --cache-bytes {cache_bytes:,} holds {held} {unit_name}{'s' if held != 1 else ''} {what}; "
                         f"the {manager} cache needs {needed}, "
                         f"{why}: --cache-bytes {needed * unit_bytes} or more, or {fix}")


def device_ordinal(device: int | str | None) -> int:
    """A ``device=`` argument as the tracer takes it: a GPU ordinal, or -1 for the CPU."""
    if device is None or device == "cpu":
        return -1
    try:
        ordinal = int(device)
    except (TypeError, ValueError):
        raise UsageError(f"device {device!r}: expected cpu or a GPU ordinal") from None
    if ordinal < 0:
        raise UsageError(f"device {device!r}: expected cpu or a GPU ordinal (0, 1, ...)")
    return ordinal


def trace(source: Any, seeds: Any, **options: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(points, offsets)`` of the streamlines from ``seeds``; :func:`trace_run` keeps the statistics too."""
    result = trace_run(source, seeds, **options)
    return result.points, result.offsets
