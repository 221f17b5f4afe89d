"""Streamlines traced by the ranks of an MPI job: how they share the field (:func:`distribution`), and
lines handed between the ranks that hold the blocks they need (:func:`trace_handed`)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

import headrace
from headrace import _ext
from headrace.distributed import ranks
from headrace.errors import UsageError
from headrace.workloads.streamlines.flow import path_of
from headrace.workloads.streamlines.seeds import as_seeds
from headrace.workloads.streamlines.tracer import TraceResult, device_ordinal

__all__ = ["DISTRIBUTIONS", "distribution", "trace_handed"]


DISTRIBUTIONS = ("auto", "replicate", "hand-off")


def distribution(source: Any, asked: str, cache_bytes: int, frame: int = 0) -> str:
    """How a job of several ranks shares the field: ``asked`` (:data:`DISTRIBUTIONS`); ``auto`` hands lines
    off when the frame's velocity does not fit one rank's cache and the file holds native blocks (a Hilbert
    unit has no neighbours to hold), and replicates otherwise."""
    if asked not in DISTRIBUTIONS:
        raise UsageError(f"distribution {asked!r}: expected one of {', '.join(DISTRIBUTIONS)}")
    ds = headrace.open(path_of(source))
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


class _PhaseClock:
    """Seconds spent in each phase of a rank's part of a handed-off trace, lap by lap."""

    NAMES = ("made", "stepping", "exchanging", "to_owners", "assembling", "to_rank_0")

    def __init__(self, started: float) -> None:
        self.at = started
        self.phases: dict[str, float] = dict.fromkeys(self.NAMES, 0.0)

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.phases[name] += now - self.at
        self.at = now


def trace_handed(source: Any, seeds: Any, *, steps: int = 1000, step_size: float = 0.01, integrator: str = "rk4",
                 direction: str = "forward", device: int | str | None = "cpu", threads: int = 0, frame: int = 0,
                 cache_bytes: int = 1 << 30, backend: str = "auto", **tuning: float) -> TraceResult | None:
    """Every seed traced by the ranks of the job (under MPI; one process is a job of one rank), lines handed
    between them: each rank starts its block of the seeds and holds its planes of blocks along z and their
    neighbours in a cache of ``cache_bytes`` in ``device``'s memory (all resident when they fit, else
    loaded as its lines wait for them); rounds of stepping alternate with an
    all-to-all of the lines that wait for a block held elsewhere, until no rank holds one. The lines on
    rank 0 (None elsewhere): one tracer's, bit for bit. Stats: the job's seconds (to the lines on rank 0),
    the slowest rank's own, lines handed."""
    job = ranks()
    seeds = as_seeds(seeds)
    ordinal = device_ordinal(device)
    job.barrier()
    started = time.perf_counter()  # making the tracer and reading its resident blocks count, as in one tracer's time
    clock = _PhaseClock(started)
    tracer = _ext.HandOffTrace(path_of(source), job.rank, job.size, frame=int(frame), integrator=integrator,
                               direction=direction, step_size=float(step_size), max_steps=int(steps), threads=int(threads),
                               cache_bytes=int(cache_bytes), device=ordinal, backend=backend, **tuning)
    bounds = job.block_bounds(len(seeds))  # rank r starts seeds [bounds[r], bounds[r + 1]) and puts their lines together
    first, end = bounds[job.rank], bounds[job.rank + 1]
    if end > first:
        tracer.start(np.ascontiguousarray(seeds[first:end]), first)
    clock.lap("made")
    handed = exchanges = 0
    while True:
        leaving, to = tracer.run()
        clock.lap("stepping")
        handed += len(to)
        if job.comm is None:  # one rank holds every block: no line leaves
            break
        for part in job.comm.alltoall([leaving[to == r] for r in range(job.size)]):
            if len(part):
                tracer.add(part)
        exchanges += 1
        held = job.comm.allreduce(tracer.held)
        clock.lap("exchanging")
        if held == 0:
            break
    # Each rank puts together the lines of its own seeds (what every rank traced of them sent to it), so
    # rank 0 only appends the ranks' lines, in seed order, instead of joining every segment alone.
    mine = tracer.result(bounds)
    ended, segments, traced = (job.alltoall_rows(mine.pop(k)) for k in ("ended", "segments", "points"))
    clock.lap("to_owners")
    own = _ext.assemble_handed(np.ascontiguousarray(seeds[first:end]), direction, int(steps), ended, segments, traced,
                               first_seed=first)
    clock.lap("assembling")
    points, times = job.gather_rows(own["points"]), job.gather_rows(own["times"])
    sizes = job.gather(len(own["points"]))
    ends = job.gather(own["ends"])
    offsets = job.gather_rows(own["offsets"][1:])
    clock.lap("to_rank_0")
    everyone = job.gather({**mine, "handed": handed, "seconds": time.perf_counter() - started, "phases": dict(clock.phases)})
    if not job.root:
        return None
    assert everyone is not None and sizes is not None and ends is not None and offsets is not None
    assert points is not None and times is not None
    # Each rank's offsets past its own points: shifted by the points of the ranks before it.
    shift = np.repeat(np.cumsum([0, *sizes[:-1]]), np.diff(bounds))
    offsets = np.concatenate([[0], offsets + shift]).astype(np.int64)
    clock.lap("to_rank_0")
    # The job's: from the ranks' start together to the lines on rank 0, as one tracer's run is timed.
    seconds = clock.at - started
    # Where the time went: each phase's longest among the ranks; the last, rank 0's own (the job's end).
    phases = {name: clock.phases[name] if name == "to_rank_0" else max(r["phases"][name] for r in everyone)
              for name in _PhaseClock.NAMES}
    stats = {"seconds": seconds, "slowest_rank_seconds": max(r["seconds"] for r in everyone), "layout": "blocks", "manager": "hand-off",
             "device": "cpu" if ordinal < 0 else ordinal, "threads": threads, "seeds": len(seeds),
             "points": len(points), "file": path_of(source), "frame": int(frame), "direction": direction,
             "ranks": job.size, "lines_handed": sum(r["handed"] for r in everyone), "exchanges": exchanges,
             "resident_rounds": max(r["rounds"] for r in everyone), "bytes_read": sum(r["bytes_read"] for r in everyone),
             "resident_blocks": [r["resident_blocks"] for r in everyone],
             "resident_load_seconds": max(r["load_seconds"] for r in everyone),
             "resident_advance_seconds": max(r["advance_seconds"] for r in everyone),
             "phase_seconds": phases}
    return TraceResult(points, offsets, [reason for part in ends for reason in part], stats, times)
