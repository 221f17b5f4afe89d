"""How a many-rank job shares the work of ``headrace render`` and ``headrace play``: never slower than one GPU.

- ``time``: each rank its block of frames, whole (no compositing, no setup beyond one rank's): a series of
  at least as many frames as ranks;
- ``sort-last``: every frame shared by space among the ranks and composited (particles by depth, volumes
  front to back): fewer frames than ranks, each of which does not fit one GPU's free memory, or whose
  time on one GPU, saved (N - 1) / N times over, repays what sharing costs: :data:`SORT_LAST_SETUP_S` once
  (the other GPUs' contexts, NCCL's communicator and connections) and :data:`COMPOSITE_S` a frame. A
  frame's time on one GPU is its load at the rate this GPU was just measured to take pinned copies, and
  its drawing at :data:`DRAW_RATES`;
- otherwise ``time`` for several frames (ranks beyond them idle) and ``one`` for one: rank 0 alone.

``auto`` picks in that order; rank 0 decides from its measurements and tells every rank, so all take the
same path. The choice and its reason are what the commands print.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from headrace import _ext
from headrace.distributed import Ranks
from headrace.errors import UsageError

__all__ = ["COMPOSITE_S", "DISTRIBUTIONS", "DRAW_RATES", "SORT_LAST_SETUP_S", "Distribution", "choose_distribution",
           "frame_bytes", "frame_work"]

DISTRIBUTIONS = ("auto", "one", "time", "sort-last")
# Measured on 2 x H200 (docs/results.md, issue 37), each command a fresh process: `mpirun -n 2 headrace
# render --frame 0 --distribute sort-last` takes 1.2 to 1.3 s longer than `--distribute one` for the same
# frame; compositing a 1024 x 768 frame over NCCL takes 1.8 (particles) to 2.0 ms (volume layers).
SORT_LAST_SETUP_S = 1.2
COMPOSITE_S = 0.002
# Elements one GPU draws a second (an H200, the same study: 100 M particles in 15 ms, 200 M AMR cells in
# 74 ms at 1024 x 768): the drawing half of a frame's time, which no copy rate says.
DRAW_RATES = {"particles": 6.5e9, "volume": 2.7e9}
FITS_FRACTION = 0.8  # of a GPU's free memory: the rest for the renderer, its buffers and the engine's staging
RATE_PROBE_BYTES = 64 << 20
# Below these, the GPU is not asked (a context made and a copy timed cost rank 0 a quarter of a second):
# a frame that would save less than the setup even loaded at SLOWEST_RATE, and fits any GPU we run on.
SLOWEST_RATE = 10e9
SMALLEST_GPU_BYTES = 16 << 30


@dataclass(frozen=True)
class Distribution:
    how: str  # one of DISTRIBUTIONS but auto
    why: str

    def describe(self) -> str:
        return f"{self.how} ({self.why})"


def frame_bytes(ds: Any, frames: Sequence[int]) -> int:
    """The largest of ``frames``' decoded bytes, every field (what a GPU receives to draw the frame)."""
    container, raw = ds.container, ds.chunk_columns["raw_size"]
    largest = 0
    for frame in frames:
        total = 0
        for index in range(len(container.fields)):
            _, first, count = container.frame_field(frame, index)
            total += int(raw[first:first + count].sum())
        largest = max(largest, total)
    return largest


def frame_work(ds: Any, frames: Sequence[int], volume: bool) -> dict[str, Any]:
    """What :func:`choose_distribution` weighs of ``frames`` (the largest): bytes, and the particles (32-byte
    records) or cells (a float32 per field) a GPU draws."""
    largest = frame_bytes(ds, frames)
    per_element = 4 * max(1, len(ds.container.fields)) if volume else 32
    return {"frame_bytes": largest, "elements": largest // per_element, "kind": "volume" if volume else "particles"}


def choose_distribution(requested: str, job: Ranks, *, frames: int, frame_bytes: int, device: int | str | None,
                        sort_last: bool = True, elements: int = 0, kind: str = "particles") -> Distribution:
    """The job's way through ``frames`` frames of ``frame_bytes`` each (the largest, of ``elements`` particles
    or cells of a ``kind`` of :data:`DRAW_RATES`) on this rank's ``device``: ``requested`` itself, or for
    ``auto`` the cheapest by measured cost (above). Collective under MPI. ``sort_last``: whether the
    workload can share a frame by space."""
    if requested not in DISTRIBUTIONS:
        raise UsageError(f"--distribute {requested}: expected one of {', '.join(DISTRIBUTIONS)}")
    if requested == "sort-last" and not sort_last:
        raise UsageError("--distribute sort-last: this workload shares frames by time only")
    if job.size == 1:
        return Distribution("one", "one rank")
    if requested != "auto":
        return Distribution(requested, "asked for")
    draw = elements / DRAW_RATES[kind] if kind in DRAW_RATES else 0.0
    chosen = _auto(job, frames, frame_bytes, draw, device, sort_last) if job.root else None
    return job.comm.bcast(chosen, root=0) if job.comm is not None else chosen  # type: ignore[return-value]


def _auto(job: Ranks, frames: int, frame_bytes: int, draw: float, device: int | str | None, sort_last: bool) -> Distribution:
    if frames >= job.size:
        return Distribution("time", f"{frames} frames for {job.size} ranks: each rank its block of whole frames")
    gigabytes = frame_bytes / 1e9
    if device in (None, "cpu"):
        return _few_frames(frames, job, "drawn on the CPU")
    ordinal = int(device)
    bound = frames * ((frame_bytes / SLOWEST_RATE + draw) * (1 - 1 / job.size) - COMPOSITE_S)
    if not sort_last or (bound <= SORT_LAST_SETUP_S and frame_bytes <= FITS_FRACTION * SMALLEST_GPU_BYTES):
        cost = (f"{frames} frame(s) of {gigabytes:.2f} GB: sharing them among {job.size} would save at most "
                f"{max(bound, 0.0) * 1e3:.0f} ms (loaded at {SLOWEST_RATE / 1e9:.0f} GB/s or faster, {draw * 1e3:.0f} ms to draw)")
        return _few_frames(frames, job, f"{cost}, less than its {SORT_LAST_SETUP_S:.1f} s of setup" if sort_last else cost)
    free, _ = _ext.gpu_memory(ordinal)
    if sort_last and frame_bytes > FITS_FRACTION * free:
        return Distribution("sort-last", f"a frame of {gigabytes:.2f} GB does not fit GPU {ordinal}'s {free / 1e9:.1f} GB free")
    rate = _ext.pinned_copy_rate(ordinal, RATE_PROBE_BYTES, 2)
    seconds = frame_bytes / rate + draw
    saved = frames * (seconds * (1 - 1 / job.size) - COMPOSITE_S)
    cost = (f"a frame of {gigabytes:.2f} GB takes {seconds * 1e3:.0f} ms on one GPU ({frame_bytes / rate * 1e3:.0f} ms to "
            f"load at {rate / 1e9:.0f} GB/s, {draw * 1e3:.0f} ms to draw); sharing {frames} among {job.size} saves "
            f"{saved * 1e3:.0f} ms")
    if sort_last and saved > SORT_LAST_SETUP_S:
        return Distribution("sort-last", f"{cost}, more than its {SORT_LAST_SETUP_S:.1f} s of setup")
    return _few_frames(frames, job, f"{cost}, less than its {SORT_LAST_SETUP_S:.1f} s of setup" if sort_last else cost)


def _few_frames(frames: int, job: Ranks, why: str) -> Distribution:
    if frames >= 2:
        return Distribution("time", f"{why}; {frames} frames, one a rank, {job.size - frames} rank(s) idle")
    return Distribution("one", f"{why}; one frame: rank 0 alone")
