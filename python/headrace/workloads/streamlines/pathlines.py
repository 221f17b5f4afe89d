"""Pathlines of a time series of flow fields (issue 40): :func:`trace_pathlines` carries each seed through
space and time, and :func:`write_pathlines` writes the paths for ParaView (``.vtp``) or NumPy (``.npz``).

    result = trace_pathlines("gyre.hrc", seeds, t0=0.0, t1=10.0, step_size=0.05, device=0)

The velocity is trilinear in space and linear in time between the two frames that bracket a time (the
frames' times from the container); steps end on every frame's time instead of crossing it. The frame
intervals run in order (backward when ``t1 < t0``): on a GPU every path steps on its own thread through a
cache of ``cache_bytes`` in GPU memory that holds whole frames when it can (the next ones loading through the
engine while the paths step between the two before them) or, for frames larger than half of it, the units
the paths ask for in rounds; ``device="cpu"`` runs the same rounds on CPU threads, the reference the GPU's
paths equal bit for bit. A path ends at ``t1`` (``end_time``), at its last point inside the grid
(``left_domain``), after ``steps`` steps (``max_steps``) or where ``progress`` stopped the run (``stopped``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from headrace import _ext
from headrace.errors import UsageError
from headrace.workloads.streamlines.flow import path_of
from headrace.workloads.streamlines.lines import TERMINATION_CODES, speeds, write_lines
from headrace.workloads.streamlines.seeds import as_seeds
from headrace.workloads.streamlines.traceable import traceable
from headrace.workloads.streamlines.tracer import device_ordinal

__all__ = ["PathlineResult", "trace_pathlines", "write_pathlines"]


@dataclass
class PathlineResult:
    """The paths and what the run did. Path ``i`` is ``points[offsets[i]:offsets[i + 1]]``, its seed's point
    first; each point has the flow's velocity there at its time and that time (float64, the series' own
    clock: its interval's frame time plus a float32 offset within the interval)."""

    points: np.ndarray
    velocities: np.ndarray
    times: np.ndarray
    offsets: np.ndarray
    seed_times: np.ndarray
    ends: list[str]
    stats: dict[str, Any] = field(default_factory=dict)

    def integration_times(self) -> np.ndarray:
        """Each point's time since its seed's release (ParaView's ``IntegrationTime``: negative backward)."""
        return self.times - np.repeat(self.seed_times, np.diff(self.offsets))


def trace_pathlines(source: Any, seeds: Any, *, seed_times: Any = None, t0: float | None = None,
                    t1: float | None = None, steps: int = 1000, step_size: float = 0.01, integrator: str = "rk4",
                    device: int | str | None = "cpu", threads: int = 0, cache_bytes: int = 1 << 30,
                    unit_pages: int = 96, backend: str = "auto", field: str | Sequence[str] | None = None,
                    progress: Callable[[int, int], bool] | None = None, say: Callable[[str], None] | None = None,
                    **tuning: float) -> PathlineResult:
    """Traces the path of every seed (an (N, 3) array of world coordinates, or what :func:`as_seeds` takes)
    released at ``seed_times`` (N times, each within [t0, t1]; default: every one at ``t0``) from ``t0`` to
    ``t1`` (default: the first frame's time and the last's), ``step_size`` in the series' time units, at
    most ``steps`` steps. ``tuning``: tolerance, min_step, max_step (``integrator="rk45"``).

    ``source`` is a flow series in native blocks or the Hilbert layout, or any series :func:`traceable`
    takes (converted into native blocks for the run, said once to ``say``). ``progress(done, intervals)``
    after each frame interval: returning False stops the run, and paths not ended end ``"stopped"``."""
    path = path_of(source)
    with traceable(path, say, field=field, cache_bytes=int(cache_bytes)) as flow:
        times = None if seed_times is None else np.ascontiguousarray(seed_times, dtype=np.float64).reshape(-1)
        run = _ext.trace_pathlines(os.fspath(flow), as_seeds(seeds), seed_times=times,
                                   t0=None if t0 is None else float(t0), t1=None if t1 is None else float(t1),
                                   integrator=integrator, step_size=float(step_size), max_steps=int(steps),
                                   threads=int(threads), cache_bytes=int(cache_bytes), unit_pages=int(unit_pages),
                                   device=device_ordinal(device), backend=backend, progress=progress, **tuning)
    arrays = ("points", "velocities", "times", "offsets", "seed_times", "ends")
    stats = {k: v for k, v in run.items() if k not in arrays}
    stats.update(device="cpu" if device_ordinal(device) < 0 else device_ordinal(device), threads=threads,
                 seeds=len(run["ends"]), points=len(run["points"]), file=os.fspath(path), integrator=integrator,
                 steps=steps, step_size=step_size, direction="forward" if run["t1"] > run["t0"] else "backward")
    return PathlineResult(run["points"], run["velocities"], run["times"], run["offsets"], run["seed_times"],
                          list(run["ends"]), stats)


def write_pathlines(path: os.PathLike | str, result: PathlineResult) -> Path:
    """Writes the paths with what ParaView's particle path filter gives them: per point ``Time`` (float64),
    ``IntegrationTime`` (since the seed's release), ``Velocity`` and its magnitude ``Speed``; per path
    ``SeedIds``, ``ReleaseTime`` and ``ReasonForTermination`` (:data:`TERMINATION_CODES`). An ``.npz`` also
    keeps ``ends``, the reasons as text. Through a temporary file and rename: a failure leaves nothing."""
    if Path(path).suffix.lower() not in (".npz", ".vtp"):
        raise UsageError(f"{path}: pathlines are written as .npz or .vtp, not {Path(path).suffix or 'no extension'}")
    codes = {end: TERMINATION_CODES[end] for end in set(result.ends)}
    line_data: dict[str, np.ndarray] = {"SeedIds": np.arange(len(result.ends), dtype=np.int64),
                 "ReleaseTime": np.asarray(result.seed_times, dtype=np.float64),
                 "ReasonForTermination": np.fromiter((codes[end] for end in result.ends), dtype=np.int32,
                                                     count=len(result.ends))}
    point_data: dict[str, Any] = {"Time": np.asarray(result.times, dtype=np.float64),
                                  "IntegrationTime": result.integration_times(),
                                  "Velocity": result.velocities, "Speed": speeds(result.velocities)}
    extra = {"ends": np.array(result.ends)} if Path(path).suffix.lower() == ".npz" else {}
    return write_lines(path, result.points, result.offsets, point_data=point_data, line_data=line_data, **extra)
