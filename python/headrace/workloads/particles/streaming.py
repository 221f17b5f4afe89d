"""Seed 000's particle renderer: a frame of the ``particles`` record (x, y, z, radius, r, g, b, a) streamed
through the engine's queue batch by batch (``batch`` particles, whole chunks) into ``segments`` segments,
each batch drawn as ray-cast sphere glyphs once it has arrived (seed 000's algorithms 1 and 2); the image
does not depend on the batching. ``device=0`` draws with the CUDA kernels, ``device="cpu"`` with the CPU
reference renderer they are checked against. ``method`` is one of seed 000's streaming methods on Linux
(:data:`METHODS`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

import headrace
from headrace import _ext
from headrace.errors import UsageError
from headrace.imaging import camera_spec, frame_of, packed_background, parse_camera, view_box
from headrace.writer import PLAIN_CODECS

__all__ = ["METHODS", "GPU_METHODS", "PLAIN_METHOD_CODECS", "method_codec", "StreamingRenderer"]


# Seed 000's methods on Linux: (queue backend, queue knobs, frame resident before the clock starts).
METHODS: dict[str, tuple[str, dict[str, Any], bool]] = {
    "auto": ("auto", {}, False),                      # the engine's read path: page cache, O_DIRECT or DMA, per read
    "vram": ("posix", {}, True),                      # the static baseline: the frame already in GPU memory
    "ram": ("ram", {}, False),                        # the file in RAM, copied batch by batch
    "ram-pinned": ("mmap", {"pin_files": True}, False),  # the file page-locked in RAM, DMA'd batch by batch
    "mmap-all": ("mmap", {"mmap_mode": "whole"}, False),
    "mmap-segment": ("mmap", {"mmap_mode": "segment"}, False),  # each render segment mapped as it loads
    "mmap-batch": ("mmap", {"mmap_mode": "window"}, False),     # the segments in flight mapped at once
    "pread": ("posix", {}, False),                    # ReadFile's counterpart: threads of pread
    "direct": ("direct", {}, False),                  # O_DIRECT
    "uring-naive": ("uring", {"max_batch": 1}, False),  # every request submitted on its own
    "uring-batched": ("uring", {}, False),
    "cufile": ("cufile", {}, False),
    "compressed-lz4": ("uring", {}, False),           # the file's chunks decoded on the GPU (CPU for --device cpu)
    "compressed-zstd": ("uring", {}, False),
    "compressed-gdeflate": ("uring", {}, False),
    "compressed-chain": ("uring", {}, False),          # chunks of codec chains (shuffle|zstd, ...), decoded the same way
}
# The plain codecs a compressed-* method is named after; chunks of any codec chain are "chain".
PLAIN_METHOD_CODECS = PLAIN_CODECS[1:]


def method_codec(codec: str) -> str:
    """What a compressed-* method calls a chunk's codec (as the index names it): a plain codec's name, or
    ``"chain"`` for a chain of stages (docs/codecs/), which the engine decodes stage by stage."""
    return codec if codec in ("none", *PLAIN_METHOD_CODECS) else "chain"


# The methods that only a GPU can run, and why.
GPU_METHODS = {"vram": "keeps the frame in GPU memory", "ram-pinned": "copies page-locked pages to the GPU by DMA",
               "cufile": "reads into GPU memory"}



def segment_bytes(ds: Any, field: int, batch: int) -> int:
    """The bytes of the largest render segment of any frame (a batch of at most ``batch`` particles in whole
    chunks, as the renderer groups them), in whole pages: the mapping methods' read task."""
    most = max((particles for frame in range(len(ds.frames))
                for *_, particles in _ext.particle_batches(ds.container, frame, field, batch)), default=1)
    page, most_task = 4096, 256 << 20  # the engine's read tasks: whole pages, at most 256 MiB
    return min(most_task, -(-max(1, most) * 32 // page) * page)  # the particles record: 8 float32


class StreamingRenderer:
    """Seed 000's renderer with its pipeline set up once: the shared engine of ``method`` (``auto``, the
    default: the engine's read path) on one file and a renderer (GPU ``device``, or the CPU reference) of
    one camera; :meth:`render` streams a frame through
    it and returns the frame's statistics, :meth:`image` the last image. Options as for
    :func:`render_streamed`."""

    def __init__(self, source: Any, *, method: str = "auto", device: int | str | None = "cpu",
                 camera: str = "orbit:30,20", field: str = "particles", width: int = 1024, height: int = 768,
                 fov: float = 45.0, background: Sequence[int] = (0, 0, 0), batch: int = 1 << 20, segments: int = 4,
                 threads: int = 0, camera_frame: int = 0, **queue_knobs: Any) -> None:
        self.dataset = ds = source if hasattr(source, "read") else headrace.open(os.fspath(source))
        if method not in METHODS:
            raise UsageError(f"method {method!r}: expected one of {', '.join(METHODS)}")
        backend, knobs, self.preload = METHODS[method]
        self.method, self.ordinal = method, -1 if device in (None, "cpu") else int(device)
        if method.startswith("compressed-"):
            wanted = method.removeprefix("compressed-")
            held = [c for c in ds.codecs if c != "none"] or ["none"]
            if {method_codec(c) for c in held} != {wanted}:
                reads = "chunks of codec chains" if wanted == "chain" else f"{wanted} chunks"
                families = {method_codec(c) for c in held}
                hint = f" (method compressed-{families.pop()} reads it)" if len(families) == 1 and "none" not in families else ""
                raise UsageError(f"{ds.path}: method {method} reads {reads}, the file holds {', '.join(held)}{hint}")
        if method in GPU_METHODS and self.ordinal < 0:
            raise UsageError(f"method {method} {GPU_METHODS[method]}: it needs a GPU (--device 0)")
        fields = [f.name for f in ds.fields]
        if field not in fields:
            raise _ext.UnknownNameError(f"{ds.path}: no field {field!r} (fields: {', '.join(fields)})")
        self.field, self.batch, self.segments = fields.index(field), int(batch), int(segments)
        if method in ("mmap-segment", "mmap-batch"):
            # Seed 000's "map individually" and "map batches": a mapping is one render segment (a batch's
            # particles, whole chunks); mmap-batch keeps as many as there are segments in flight.
            knobs = {**knobs, "task_size_bytes": segment_bytes(ds, self.field, self.batch)}
            if method == "mmap-batch":
                knobs["mmap_window_segments"] = self.segments
        # The process's engine for this method: its queue, staging and page-locked files outlive the renderer.
        started = time.perf_counter()
        self.engine = headrace.shared_engine(None if self.ordinal < 0 else self.ordinal, backend=backend,
                                             decode_on="gpu" if self.ordinal >= 0 else "cpu", **{**knobs, **queue_knobs})
        self.queue = self.engine.queue
        engine_made = time.perf_counter()
        self.file = self.engine.add_file(ds.path)
        file_added = time.perf_counter()
        camera_frame = frame_of(ds, camera_frame)
        # One camera for the series, framed on one frame's box.
        view = camera_spec(width, height, fov, **parse_camera(camera, view_box(ds, camera_frame, field)))
        self._renderer = _ext.FrameRenderer(view, packed_background(background), self.ordinal, int(threads))
        # Where the setup went (--stats): the engine (its GPU context too, when not made ahead), the file
        # added (page-locked where the engine pins it), the camera and the renderer.
        self.setup_seconds = {"engine": engine_made - started, "file": file_added - engine_made,
                              "renderer": time.perf_counter() - file_added}

    def render(self, frame: int, *, draw: bool = True, next_frame: int | None = None) -> dict[str, Any]:
        """Streams frame ``frame`` and draws it; ``draw=False`` streams it alone (the I/O half of the overlap).
        ``next_frame``: the frame the next call renders (a series): its first batches are loaded while this
        frame is drawn and go on loading after this call returns (``loaded_ahead`` of the next call's stats,
        whose ``seconds`` then count from this call's end, the time between the calls included)."""
        ds = self.dataset
        frame = frame_of(ds, frame)
        if next_frame is not None:
            next_frame = frame_of(ds, next_frame)
        native_queue = self.queue._native
        if native_queue is None:  # the engine was closed (release_engines)
            raise UsageError(f"{ds.path}: the renderer's engine was released; make a new renderer")
        stats = self._renderer.render(native_queue, self.file, ds.container, int(frame), self.field, self.batch,
                                      self.segments, self.preload, draw, None if next_frame is None else int(next_frame))
        stats.update(method=self.method, device="cpu" if self.ordinal < 0 else self.ordinal)
        return stats

    def image(self) -> np.ndarray:
        """The last frame's image (height, width, 4) uint8 RGBA; on a GPU in memory the renderer takes back for a
        later image once the array is gone (:meth:`reserve_images`)."""
        return self._renderer.image()

    def reserve_images(self, count: int) -> None:
        """Makes the memory of ``count`` images ahead, its pages in place: a series whose writers hold that many
        images at once then draws no frame whose image faults its memory in (nothing on the CPU)."""
        self._renderer.reserve_images(int(count))

    def describe(self) -> str:
        return self.queue.describe()
