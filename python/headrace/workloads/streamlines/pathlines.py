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

Streaklines (:func:`trace_streaklines`) release every seed again every ``release_every`` steps of the series'
time, each release a particle: the streak of a seed at a time is its particles then, in the order they were
released, the line a dye injector at the seed draws. :func:`write_series` writes the particles or the streaks
at every frame's time as a ``.pvd`` series ParaView animates.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from headrace import _ext
from headrace._files import replacing
from headrace.errors import UsageError
from headrace.workloads.streamlines.flow import path_of
from headrace.workloads.streamlines.lines import TERMINATION_CODES, speeds, write_lines
from headrace.workloads.streamlines.seeds import as_seeds
from headrace.workloads.streamlines.traceable import traceable
from headrace.workloads.streamlines.tracer import device_ordinal, joined_offsets, joined_stats

# How the counters of runs over blocks of seeds make those of one run (PathlineResult.joined).
_ADDED_UP = ("seeds", "points", "particles", "bytes_read", "resident_rounds", "resident_units_loaded")
_SLOWEST = ("seconds", "resident_load_seconds", "resident_advance_seconds", "home_seconds")

__all__ = ["PathlineResult", "trace_pathlines", "write_pathlines", "release_times", "trace_streaklines", "positions_at",
           "write_series"]


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
    # Which seed each particle was released from (streaklines release each seed many times); None: particle i
    # is seed i's.
    seed_ids: np.ndarray | None = None

    def seeds_of_particles(self) -> np.ndarray:
        return np.arange(len(self.ends), dtype=np.int64) if self.seed_ids is None else self.seed_ids

    @classmethod
    def joined(cls, parts: list[PathlineResult], first_seeds: Sequence[int]) -> PathlineResult:
        """The particles of runs over consecutive blocks of seeds (the ranks of a job, in order; part ``r``'s
        seeds begin at ``first_seeds[r]``) as one run over all of them. Stats: the first part's, counts summed,
        the slowest part's seconds, and every part's under ``"parts"``."""
        offsets = joined_offsets([p.offsets for p in parts], [len(p.points) for p in parts])
        stats = joined_stats([p.stats for p in parts], _ADDED_UP, _SLOWEST)
        return cls(np.concatenate([p.points for p in parts]), np.concatenate([p.velocities for p in parts]),
                   np.concatenate([p.times for p in parts]), offsets,
                   np.concatenate([p.seed_times for p in parts]), [end for p in parts for end in p.ends], stats,
                   np.concatenate([p.seeds_of_particles() + first for p, first in zip(parts, first_seeds)]))

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
    ordinal = device_ordinal(device)
    with traceable(path, say, field=field, cache_bytes=int(cache_bytes)) as flow:
        times = None if seed_times is None else np.ascontiguousarray(seed_times, dtype=np.float64).reshape(-1)
        run = _ext.trace_pathlines(os.fspath(flow), as_seeds(seeds), seed_times=times,
                                   t0=None if t0 is None else float(t0), t1=None if t1 is None else float(t1),
                                   integrator=integrator, step_size=float(step_size), max_steps=int(steps),
                                   threads=int(threads), cache_bytes=int(cache_bytes), unit_pages=int(unit_pages),
                                   device=ordinal, backend=backend, progress=progress, **tuning)
    arrays = ("points", "velocities", "times", "offsets", "seed_times", "ends")
    stats = {k: v for k, v in run.items() if k not in arrays}
    stats.update(device="cpu" if ordinal < 0 else ordinal, threads=threads,
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
    line_data: dict[str, np.ndarray] = {"SeedIds": result.seeds_of_particles(),
                 "ReleaseTime": np.asarray(result.seed_times, dtype=np.float64),
                 "ReasonForTermination": np.fromiter((codes[end] for end in result.ends), dtype=np.int32,
                                                     count=len(result.ends))}
    point_data: dict[str, Any] = {"Time": np.asarray(result.times, dtype=np.float64),
                                  "IntegrationTime": result.integration_times(),
                                  "Velocity": result.velocities, "Speed": speeds(result.velocities)}
    extra: dict[str, Any] = {"ends": np.array(result.ends)} if Path(path).suffix.lower() == ".npz" else {}
    return write_lines(path, result.points, result.offsets, point_data=point_data, line_data=line_data, **extra)


def release_times(t0: float, t1: float, every: float) -> np.ndarray:
    """The times a streakline releases its seeds again: t0, t0 + every, ... up to t1 (down, backward)."""
    if not every > 0:
        raise UsageError(f"streaklines release every positive time, not {every}")
    count = math.floor(abs(t1 - t0) / every * (1 + 1e-12)) + 1
    return t0 + np.sign(t1 - t0) * every * np.arange(count, dtype=np.float64)


def trace_streaklines(source: Any, seeds: Any, *, release_every: int = 1, t0: float | None = None,
                      t1: float | None = None, step_size: float = 0.01, **options: Any) -> PathlineResult:
    """Streaklines: every seed released at t0 and again every ``release_every`` steps of ``step_size`` up to
    ``t1``, each release a particle traced to t1 (:func:`trace_pathlines`, whose other ``options`` it takes).
    Particle ``i`` comes from seed ``seed_ids[i]``, released at ``seed_times[i]``; a seed's particles follow one
    another in release order."""
    import headrace

    seed_points = as_seeds(seeds)
    if t0 is None or t1 is None:  # the series' first and last times
        frames = headrace.open(path_of(source)).frames
        t0 = frames[0].time if t0 is None else t0
        t1 = frames[-1].time if t1 is None else t1
    start, end = float(t0), float(t1)
    if release_every < 1:
        raise UsageError(f"--release-every {release_every}: streaklines release their seeds every 1 step or more")
    releases = release_times(start, end, release_every * float(step_size))
    per_seed = len(releases)
    result = trace_pathlines(source, np.repeat(seed_points, per_seed, axis=0), seed_times=np.tile(releases, len(seed_points)),
                             t0=start, t1=end, step_size=step_size, **options)
    result.seed_ids = np.repeat(np.arange(len(seed_points), dtype=np.int64), per_seed)
    result.stats.update(releases=per_seed, release_every=release_every, particles=len(result.ends), seeds=len(seed_points))
    return result


def positions_at(result: PathlineResult, time: float) -> np.ndarray:
    """The points (indices into ``result.points``) where particles stand at ``time``, one a particle alive then,
    in particle order: every path has a point on each frame's time it lived through, and on t0 and t1."""
    return np.flatnonzero(result.times == time)


def write_series(path: os.PathLike | str, result: PathlineResult, *, streaks: bool = False,
                 times: Sequence[float] | None = None) -> Path:
    """Writes the particles at each of ``times`` (default: every frame's time between t0 and t1, with t0 and
    t1) as a ``.pvd`` series ParaView animates: ``PATH.pvd`` and one ``.vtp`` a time in the folder
    ``PATH_pieces``, each a set of points (``streaks``: each seed's particles joined in release order, a
    streakline) with ``SeedIds``, ``ReleaseTime``, ``Age`` and ``Velocity``. The folder is made whole under a
    temporary name and renamed, then the ``.pvd``: a failure leaves neither."""
    path = Path(path)
    if path.suffix.lower() != ".pvd":
        raise UsageError(f"{path}: a series of point sets is written as .pvd, not {path.suffix or 'no extension'}")
    if times is None:
        import headrace

        low, high = sorted((result.stats["t0"], result.stats["t1"]))
        frames = [t for t in (f.time for f in headrace.open(result.stats["file"]).frames) if low < t < high]
        times = sorted({low, high, *frames}, reverse=result.stats["t1"] < result.stats["t0"])
    particle = np.repeat(np.arange(len(result.ends), dtype=np.int64), np.diff(result.offsets))
    seeds = result.seeds_of_particles()
    pieces = path.with_name(f"{path.stem}_pieces")
    entries = []
    with tempfile.TemporaryDirectory(prefix=f".{path.stem}-", dir=path.parent) as folder:
        building = Path(folder) / pieces.name
        building.mkdir()
        for n, time in enumerate(times):
            at = positions_at(result, time)
            order = np.lexsort((particle[at], seeds[particle[at]]))  # by seed, then release
            at = at[order]
            owners = particle[at]
            if streaks:
                starts = np.flatnonzero(np.r_[True, seeds[owners][1:] != seeds[owners][:-1]])
                offsets = np.r_[starts, len(at)].astype(np.int64)
            else:
                offsets = np.arange(len(at) + 1, dtype=np.int64)
            name = f"{path.stem}_{n:05d}.vtp"
            point_data = {"SeedIds": seeds[owners], "ReleaseTime": np.asarray(result.seed_times[owners], dtype=np.float64),
                          "Age": np.asarray(time - result.seed_times[owners], dtype=np.float64),
                          "Velocity": np.ascontiguousarray(result.velocities[at])}
            write_lines(building / name, np.ascontiguousarray(result.points[at]), offsets, point_data=point_data,
                        cells="Lines" if streaks else "Verts")
            entries.append(f'<DataSet timestep="{time!r}" group="" part="0" file="{pieces.name}/{name}"/>')
        if pieces.exists():
            shutil.rmtree(pieces)
        os.replace(building, pieces)
    collection = ('<?xml version="1.0"?>\n<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">\n'
                  "<Collection>\n" + "\n".join(entries) + "\n</Collection>\n</VTKFile>\n")
    with replacing(path) as partial:
        Path(partial).write_text(collection)
    return path

