"""The particle-streaming study of Müller and Ertl, "Quantifying Performance Gains of DirectStorage for
the Visualisation of Time-Dependent Particle Data Sets", on Linux: each configuration renders the file's
frames round robin through :class:`headrace.workloads.particles.StreamingRenderer` and is timed in the paper's three
phases (its algorithm 3, :func:`algorithm3`).

1. Pre-warm: render ``prewarm`` frames, time them, and grow the frame count until it fills the target
   wall time ``wall_seconds`` (``p = max(1, ceil(T_w * p / elapsed))`` until it no longer grows); cold,
   these frames are cold too (pages dropped before each, outside the clock), so ``p`` fits cold frames.
2. Draw times: ``gpu_iterations`` frames, each one's draw time (CUDA events around every batch's passes
   on a GPU, wall time on the CPU), summed per frame: min, median, max.
3. Wall time: ``p`` frames, each from its first request to its last pass (the pipeline is set up once,
   before the clock; vram's frame is loaded before it): total, and per frame. Cold: the file's pages are
   dropped before every frame of phase 3, outside the clock (cold: this file's pages evicted; drop-all: the
   whole machine's page cache dropped, as root); hot: the frames follow one another.

The factors (the paper's): ``method``, ``batch`` (particles per batch), ``segments`` (batches in flight)
and ``staging_bytes``. :func:`grid` enumerates a space; :func:`sample` draws ``n`` configurations from
per-factor distributions (the paper's proposed fix: sample the space instead of gridding it); the space
is :mod:`headrace.tuning`'s, which ``headrace tune`` searches.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from headrace import _ext
from headrace._deprecated import moved
from headrace.bench.harness import Stopwatch, uncache
from headrace.errors import UsageError
from headrace.imaging import camera_spec, packed_background, parse_camera
from headrace.workloads.particles import StreamingRenderer

__all__ = ["renderer_for", "algorithm3", "Overlap", "overlap", "overlap_seconds", "kvikio_renderer", "BASELINES",
           "IN_MEMORY", "KEY"]

# The factor space is tuning's (headrace.tuning), which the product searches; its old names here warn
# for one release.
__getattr__ = moved(__name__, {name: "headrace.tuning" for name in ("Space", "grid", "sample", "machine")})

# The rows to measure the others against, not ways to stream through headrace: the frame already in GPU
# memory and the KvikIO peer (no overlap of their own, never a tuned profile).
BASELINES = ("vram", "kvikio")

# The methods that hold the file in memory before the clock (read whole, page-locked, or mapped whole and
# kept mapped: dropping the page cache does not evict mapped pages), so a cold cache does not reach them;
# the others read the file during the frame, as the KvikIO peer does.
IN_MEMORY = ("ram", "ram-pinned", "mmap-all")

# What makes two rows the same configuration (a resumed run skips those already measured).
KEY = ("file", "device", "cache", "series", "method", "batch", "segments", "staging_bytes")


@dataclass
class Algorithm3:
    """One configuration's result: the paper's three outputs and the run's counters."""

    prewarm_frames: int
    wall_frames: int
    wall_seconds: float
    draw_seconds: list[float] = field(default_factory=list)  # phase 2, per frame, sorted
    segment_waits: int = 0
    h2d_seconds: float | None = 0.0  # phase 3, the copy stream's busy time (None: not measured, the peer)
    stored_bytes: int = 0
    particles_per_frame: float = 0  # the mean over the frames rendered (a series' frames differ, empty ones too)
    batches_per_frame: float = 0

    def row(self) -> dict[str, Any]:
        draws = self.draw_seconds
        return {"frame_seconds": self.wall_seconds / self.wall_frames, "wall_seconds": self.wall_seconds,
                "wall_frames": self.wall_frames, "prewarm_frames": self.prewarm_frames,
                "draw_min_s": draws[0], "draw_median_s": statistics.median(draws), "draw_max_s": draws[-1],
                "segment_waits_per_frame": self.segment_waits / self.wall_frames,
                "h2d_s_per_frame": None if self.h2d_seconds is None else self.h2d_seconds / self.wall_frames,
                "stored_bytes_per_frame": self.stored_bytes // self.wall_frames,
                "particles_per_frame": self.particles_per_frame, "batches_per_frame": self.batches_per_frame}


def renderer_for(dataset: Any, config: dict[str, Any], *, device: int | str, width: int, height: int) -> Any:
    """The StreamingRenderer of one configuration (method, batch, segments, staging_bytes)."""
    return StreamingRenderer(dataset, method=config["method"], device=device, batch=config["batch"],
                             segments=config["segments"], staging_bytes=config["staging_bytes"], width=width, height=height)


@dataclass(frozen=True)
class Overlap:
    """Median seconds per frame streamed and drawn, streamed alone, and drawing alone (the drawn frames'
    draw seconds), over the same pairs of frames."""

    drawn_seconds: float
    alone_seconds: float
    draw_seconds: float

    @property
    def ratio(self) -> float:
        """The frame time over max(streaming alone, drawing alone): 1 where the two overlap perfectly."""
        return self.drawn_seconds / max(self.alone_seconds, self.draw_seconds)


def overlap(renderer: Any, frames: Sequence[int], count: int, cache: str, least: int = 7,
            series: bool = False) -> Overlap:
    """The paper's overlap over ``count`` (at least ``least``) pairs of the same frame measured one after
    the other, drawn and streamed alone: both halves see the same moment of the disk and of the page
    cache, so their ratio does not carry the noise of two separate runs; medians, so that one frame held
    up by something else (a page fault, another process) does not move a millisecond-long frame's ratio.
    The drawing alone is the drawn frames' own draw time, so a series of frames of different sizes
    compares like with like. ``series``: each call loads the next call's frame ahead (the same frame,
    for the other half), as :func:`algorithm3` does."""
    seconds: dict[bool, list[float]] = {True: [], False: []}
    draws: list[float] = []
    pairs = max(count, least)
    for n in range(pairs):
        for draw in (True, False):
            uncache([renderer.dataset.path], cache)
            ahead = {"next_frame": frames[(n + 1) % len(frames) if not draw else n % len(frames)]} if series else {}
            stats = renderer.render(frames[n % len(frames)], draw=draw, **ahead)
            seconds[draw].append(stats["seconds"])
            if draw:
                draws.append(stats.get("draw_seconds", 0.0))
    return Overlap(statistics.median(seconds[True]), statistics.median(seconds[False]), statistics.median(draws))


def overlap_seconds(renderer: Any, frames: Sequence[int], count: int, cache: str, least: int = 7,
                    series: bool = False) -> tuple[float, float]:
    """Median seconds per frame streamed and drawn, and streamed alone: :func:`overlap`'s first two."""
    measured = overlap(renderer, frames, count, cache, least, series)
    return measured.drawn_seconds, measured.alone_seconds


def algorithm3(renderer: Any, frames: Sequence[int], *, cache: str, prewarm: int = 4, wall_seconds: float = 2.0,
               gpu_iterations: int = 8, max_frames: int = 1000, series: bool = False,
               whole_series: bool = False) -> Algorithm3:
    """The paper's three-phase timing (its algorithm 3) over ``renderer`` (a StreamingRenderer), frames
    round robin. ``series`` (hot only): each frame loads the next one's first batches while it is drawn.
    ``whole_series``: the frames differ in size (empty ones, say), so the timed frames start at the first
    and take in every frame at least once (up to ``max_frames``), as a frame time over a part of such a
    series would say nothing of the rest."""
    if series and cache != "hot":
        raise UsageError("a series loads the next frame ahead, before the cold run would drop its pages: hot only")
    turn = 0
    seen: dict[int, tuple[int, int]] = {}  # particles and batches of each frame rendered, in any phase

    def render(**options: Any) -> dict[str, Any]:
        nonlocal turn
        frame = frames[turn % len(frames)]
        turn += 1
        ahead = {"next_frame": frames[turn % len(frames)]} if series else {}
        stats = renderer.render(frame, **options, **ahead)
        seen[frame] = (stats["particles"], stats["batches"])
        return stats

    paths = [renderer.dataset.path]

    def frame_seconds_spent(count: int) -> float:
        """Renders count frames; cold, each after its pages are dropped (outside the clock)."""
        spent = 0.0
        for _ in range(count):
            uncache(paths, cache)
            clock = Stopwatch()
            render()
            spent += clock.seconds()
        return spent

    # Phase 1: pre-warm, and the frame count that fills wall_seconds (cold frames when cold is measured).
    p = prewarm
    while True:
        elapsed = frame_seconds_spent(p)
        q = min(max_frames, max(1, math.ceil(wall_seconds * p / max(elapsed, 1e-9))))
        if q <= p:
            break
        p = q
    # Phase 2: per-frame draw times.
    draws = sorted(render()["draw_seconds"] for _ in range(gpu_iterations))
    # Phase 3: wall time over p frames.
    if whole_series:
        p, turn = min(max_frames, max(p, len(frames))), 0
    total, waits, stored = 0.0, 0, 0
    h2d: float | None = 0.0  # None once a frame did not time its copies
    for _ in range(p):
        uncache(paths, cache)
        last = render()
        total += last["seconds"]
        waits += last["segment_waits"]
        stored += last["stored_bytes"]
        h2d = None if h2d is None or last["h2d_seconds"] is None else h2d + last["h2d_seconds"]
    return Algorithm3(prewarm_frames=prewarm, wall_frames=p, wall_seconds=total, draw_seconds=draws,
                      segment_waits=waits, h2d_seconds=h2d, stored_bytes=stored,
                      particles_per_frame=_mean(n for n, _ in seen.values()),
                      batches_per_frame=_mean(b for _, b in seen.values()))


def _mean(counts: Iterable[int]) -> float:
    """A count per frame: whole when every frame holds as many, else the mean to two places."""
    mean = statistics.fmean(counts)
    return int(mean) if mean.is_integer() else round(mean, 2)


def kvikio_renderer(dataset: Any, *, device: int, batch: int, width: int, height: int, camera: str = "orbit:30,20") -> Any:
    """The peer to beat: frames read with KvikIO into CuPy arrays, batch by batch into two
    buffers (one read while the other is drawn), and drawn by headrace's own GPU renderer. Has the
    ``render(frame)`` and ``dataset`` of :class:`headrace.workloads.particles.StreamingRenderer`, so algorithm 3
    measures it alike."""
    import cupy  # type: ignore[import]  # GPU machines only

    # KvikIO's best of the engine bench (16 threads, 16 MiB tasks), in compatibility mode (POSIX reads and
    # copies: where GDS cannot register files, as in the GPU machine's container, its automatic mode
    # fails to open them), unless the caller's environment chose otherwise.
    for name, value in (("KVIKIO_COMPAT_MODE", "ON"), ("KVIKIO_NTHREADS", "16"), ("KVIKIO_TASK_SIZE", str(16 << 20))):
        os.environ.setdefault(name, value)
    import kvikio  # type: ignore[import]  # GPU machines only

    field = [f.name for f in dataset.fields].index("particles")
    table = dataset.container.chunk_table()
    view = camera_spec(width, height, 45.0, **parse_camera(camera, dataset.frames[0].bbox))
    native = _ext.FrameRenderer(view, packed_background((0, 0, 0)), int(device), 0)

    class KvikioRenderer:
        def __init__(self) -> None:
            self.dataset = dataset
            self.file = kvikio.CuFile(str(dataset.path), "r")
            self.stream = cupy.cuda.Stream(non_blocking=True)
            self.buffers: list[Any] = []
            self.drawn = [cupy.cuda.Event(), cupy.cuda.Event()]
            self.timings: list[tuple[Any, Any]] = []  # per batch, kept from frame to frame

        def render(self, frame: int) -> dict[str, Any]:
            batches = _ext.particle_batches(dataset.container, frame, field, batch)
            chunks = [i for i in range(len(table["frame"]))  # this frame's particle chunks, in order
                      if table["frame"][i] == frame and table["field"][i] == field]
            largest = max(p for *_, p in batches) * 32
            if not self.buffers or self.buffers[0].nbytes < largest:
                self.buffers = [cupy.empty(largest, dtype=cupy.uint8) for _ in range(2)]
            while len(self.timings) < len(batches):  # made before the clock, as headrace's are
                self.timings.append((cupy.cuda.Event(), cupy.cuda.Event()))
            clock = Stopwatch()
            native.clear(self.stream.ptr)

            def read(b: int) -> list[Any]:
                first_chunk, count, first_particle, _ = batches[b]
                target = self.buffers[b % 2]
                self.drawn[b % 2].synchronize()  # the draw that read this buffer is done
                futures = []
                for k in chunks[first_chunk:first_chunk + count]:
                    at = (int(table["first_element"][k]) - first_particle) * 32
                    size = int(table["raw_size"][k])
                    futures.append(self.file.pread(target[at:at + size], size, int(table["offset"][k])))
                return futures

            stored, pending = 0, read(0)
            for b, (_, _, first_particle, particles) in enumerate(batches):
                stored += sum(f.get() for f in pending)
                pending = read(b + 1) if b + 1 < len(batches) else []
                self.timings[b][0].record(self.stream)
                native.draw_device(self.buffers[b % 2].data.ptr, particles, first_particle, self.stream.ptr)
                self.timings[b][1].record(self.stream)
                self.drawn[b % 2].record(self.stream)
            self.stream.synchronize()
            seconds = clock.seconds()
            drawing = sum(cupy.cuda.get_elapsed_time(*self.timings[b]) for b in range(len(batches))) / 1e3
            return {"seconds": seconds, "draw_seconds": drawing, "segment_waits": 0, "h2d_seconds": None, "stored_bytes": stored,
                    "particles": sum(p for *_, p in batches), "batches": len(batches)}

        def image(self) -> Any:
            return native.image(self.stream.ptr)

        def describe(self) -> str:
            return f"KvikIO {kvikio.__version__} CuFile.pread into CuPy, two buffers, headrace's GPU renderer"

    return KvikioRenderer()
