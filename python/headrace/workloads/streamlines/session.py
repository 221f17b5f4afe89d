"""A tracer held across traces of one field (seed ``002_…``'s tracer, kept warm): a notebook's second call,
a viewer's next rake of seeds.

    with TraceSession("flow.hrc", device=0, steps=2000) as tracer:
        first = tracer.trace(uniform_seeds("flow.hrc", 65536))
        second = tracer.trace(rake_seeds(...))  # the blocks are still in GPU memory: no reads

Each :meth:`TraceSession.trace` is :func:`trace_run`'s resident tracer over the seeds given (the same
lines, bit for bit), without its setup: the CUDA context, the kernels, the engine's queue and the cache
with the blocks it read stay between traces. The blocks of the frame are read when the session is made
when they fit ``cache_bytes``; otherwise the cache holds those the lines wait for, round by round, and
keeps them for the next trace. The field must hold native blocks (``headrace generate flow``, or
:func:`traceable` for any other flow field).
"""

from __future__ import annotations

import time
from typing import Any

from headrace import _ext
from headrace.workloads.streamlines.flow import path_of
from headrace.workloads.streamlines.seeds import as_seeds
from headrace.workloads.streamlines.tracer import TraceResult, device_ordinal

__all__ = ["TraceSession"]


class TraceSession:
    """Streamlines of frame ``frame`` of ``source`` traced again and again with one set of options (those
    of :func:`trace_run`) on ``device`` (a GPU number, or ``"cpu"`` for the host's threads). ``setup``: what
    making it cost, the blocks read up front among it (seconds, bytes_read)."""

    def __init__(self, source: Any, *, steps: int = 1000, step_size: float = 0.01, integrator: str = "rk4",
                 direction: str = "forward", device: int | str | None = "cpu", threads: int = 0, frame: int = 0,
                 cache_bytes: int = 1 << 30, backend: str = "auto", **tuning: float) -> None:
        self.path = path_of(source)
        self.steps, self.direction, self.threads, self.frame = int(steps), direction, int(threads), int(frame)
        self.ordinal = device_ordinal(device)
        started = time.perf_counter()
        # One rank of a job of one holds every block: the hand-off tracer's rounds are the resident tracer's.
        self._tracer: Any = _ext.HandOffTrace(self.path, 0, 1, frame=self.frame, integrator=integrator, direction=direction,
                                              step_size=float(step_size), max_steps=self.steps, threads=self.threads,
                                              cache_bytes=int(cache_bytes), device=self.ordinal, backend=backend, **tuning)
        read = self._tracer.result()
        self.setup = {"seconds": time.perf_counter() - started, "bytes_read": read["bytes_read"],
                      "load_seconds": read["load_seconds"], "resident_blocks": read["resident_blocks"]}
        self.traces = 0

    def trace(self, seeds: Any) -> TraceResult:
        """The lines from ``seeds`` (an (N, 3) array of world coordinates), one per seed in order. Stats: this
        trace's seconds (to the lines on the host), its reads and rounds, and the session's setup apart."""
        if self._tracer is None:
            raise ValueError(f"{self.path}: this TraceSession is closed")
        seeds = as_seeds(seeds)
        started = time.perf_counter()
        self._tracer.forget_lines()
        self._tracer.start(seeds, 0)
        self._tracer.run()  # a job of one rank: no line waits for a block held elsewhere
        run = self._tracer.lines(seeds)
        self.traces += 1
        stats = {"seconds": time.perf_counter() - started, "layout": "blocks", "manager": "resident (held)",
                 "device": "cpu" if self.ordinal < 0 else self.ordinal, "threads": self.threads, "seeds": len(seeds),
                 "points": len(run["points"]), "file": self.path, "frame": self.frame, "direction": self.direction,
                 "trace": self.traces, "resident_rounds": run["rounds"], "resident_blocks": run["resident_blocks"],
                 "bytes_read": run["bytes_read"], "resident_load_seconds": run["load_seconds"],
                 "resident_advance_seconds": run["advance_seconds"],
                 "setup_seconds": self.setup["seconds"], "setup_bytes_read": self.setup["bytes_read"]}
        return TraceResult(run["points"], run["offsets"], list(run["ends"]), stats, run["times"])

    def close(self) -> None:
        """Lets go of the cache, the queue and the GPU memory now (a later trace raises)."""
        self._tracer = None

    def __enter__(self) -> TraceSession:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
