"""Sort-last rendering of particles over MPI: each rank draws its share of a frame, the images are composited.

    image, stats = headrace.workloads.particles.sort_last.render_particles(ds, frame=0, device=0)  # under mpirun

A particle frame is shared by space: its chunks sorted along the longest axis of the frame's box by their
centres (the index records each chunk's value ranges) and cut into one contiguous run a rank, the runs'
particle counts within a chunk of each other. Each rank reads its chunks through its engine (packed into
one buffer) and draws them with their numbers in the frame, so that every pixel's depth key (the ray
depth's bits, then the particle's number) means the same on every rank. Compositing keeps, per pixel, the
least key of all ranks (an MPI allreduce with MIN) and the colour of the rank that drew it (a reduce with
bitwise OR, every other rank giving 0): the image is the single-rank image, bit for bit, since a key
decides a pixel alone and ties go to the lower number on every rank alike (sphere_glyphs_shared.hpp).
That is the host's path (MPI over NumPy arrays); when every rank draws on a GPU of its own and NCCL
loads, the keys and colours never leave the GPUs: ``_ext.DepthCompositor`` exchanges them over NCCL
(direct send or binary swap, :func:`pick_schedule`) and merges them with a kernel of the same rule, and
only the composited image comes to rank 0's host.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

import headrace
from headrace import _ext
from headrace.distributed import Ranks, ranks
from headrace.errors import UsageError
from headrace.imaging import camera_spec, expect_frame, packed_background, parse_camera, view_box
from headrace.workloads.chunks import frame_chunks, read_chunks
from headrace.workloads.compositing import choose_compositing

__all__ = ["share_chunks", "composite_by_depth", "pick_schedule", "ParticleShares", "render_particles", "SCHEDULES"]

NO_KEY = np.iinfo(np.int64).max  # where a rank drew nothing, in the signed keys compositing reduces


def share_chunks(ds: Any, frame: int, field: str, size: int) -> list[list[int]]:
    """Each rank's chunks of one frame's field (positions among the frame's chunks), by space: sorted by their
    centres along the frame's longest axis, cut into runs of about equal element counts."""
    container, table = ds.container, ds.chunk_columns
    rows = frame_chunks(container, frame, field)
    if rows.size == 0:
        return [[] for _ in range(size)]
    lows, highs = (np.asarray(a)[:, :3] for a in container.chunk_ranges(int(rows[0]), int(rows.size)))
    centres = np.where(np.isfinite(lows + highs), (lows + highs) / 2, 0.0)
    axis = int(np.argmax(centres.max(axis=0) - centres.min(axis=0)))
    order = np.argsort(centres[:, axis], kind="stable")
    counts = table["raw_size"][rows][order].astype(np.float64)
    # A chunk goes to the rank whose share of the running count its middle falls in.
    middles = (np.cumsum(counts) - counts / 2) / counts.sum()
    owner = np.minimum((middles * size).astype(np.int64), size - 1)
    return [sorted(int(order[k]) for k in np.flatnonzero(owner == rank)) for rank in range(size)]


def composite_by_depth(job: Ranks, keys: np.ndarray, rgba: np.ndarray, background: int) -> np.ndarray | None:
    """The composited (height, width, 4) uint8 image on rank 0 (None elsewhere) from every rank's depth keys
    (uint64) and colours (RGBA8): per pixel the least key's colour, the background where no rank drew."""
    from mpi4py import MPI  # type: ignore[import-not-found]  # under mpirun only

    # As signed 64-bit numbers (a drawn key's top bit is 0: a positive float's bits, shifted), the empty key
    # the largest: MPICH 4.0 reduces MIN over unsigned 64-bit as if signed, so all ones would beat any key.
    keys = np.ascontiguousarray(keys, dtype=np.uint64).view(np.int64).copy()
    keys[keys == -1] = NO_KEY
    colours = np.ascontiguousarray(rgba).view(np.uint32).reshape(keys.shape)
    nearest = np.empty_like(keys)
    job.comm.Allreduce(keys, nearest, op=MPI.MIN)
    mine = np.where((keys == nearest) & (nearest != NO_KEY), colours, np.uint32(0))
    merged = np.empty_like(mine) if job.root else None
    job.comm.Reduce(mine, merged, op=MPI.BOR, root=0)
    if not job.root:
        return None
    assert merged is not None
    image = np.where(nearest == NO_KEY, np.uint32(background), merged)
    return image.view(np.uint8).reshape(*keys.shape, 4)


SCHEDULES = ("auto", "direct-send", "binary-swap")
# Direct send costs a rank N - 1 messages of an image's 1/N, binary swap log2(N) of halves: below this
# size a message is mostly latency, and the fewer rounds win.
SMALLEST_DIRECT_SEND_MESSAGE = 256 << 10
PIXEL_BYTES = 12  # a depth key (8) and a colour (4)


def pick_schedule(ranks: int, width: int, height: int, schedule: str = "auto", nodes: int = 1) -> str:
    """The GPU compositing schedule for ``ranks`` images of width x height on ``nodes`` nodes: direct send,
    unless binary swap is asked for or (``auto``) the ranks are a power of two above 2 whose direct-send
    messages would be small, or spread over several nodes (binary swap's last rounds alone cross the
    network, the first ones stay on NVLink: a quarter of direct send's bytes between 2 nodes of 4 GPUs)."""
    if schedule not in SCHEDULES:
        raise UsageError(f"schedule {schedule!r}: expected one of {', '.join(SCHEDULES)}")
    power_of_two = ranks > 0 and ranks & (ranks - 1) == 0
    if schedule == "binary-swap" and not power_of_two:
        raise UsageError(f"binary swap composites a power of two ranks, not {ranks} (direct send composites any number)")
    if schedule != "auto":
        return schedule
    small = width * height * PIXEL_BYTES / max(ranks, 1) < SMALLEST_DIRECT_SEND_MESSAGE
    return "binary-swap" if power_of_two and ranks > 2 and (small or nodes > 1) else "direct-send"


class ParticleShares:
    """A particle field drawn by every rank of the job, each its share of a frame's chunks (by space), and
    composited by depth: the renderer, its stream and the compositor set up once, for every frame drawn.
    With one rank its share is the whole frame.

    ``compositing``: ``auto`` (on the GPUs over NCCL when every rank has its own GPU and NCCL, else through
    host memory over MPI), ``gpu`` or ``host`` (:mod:`headrace.workloads.compositing`); ``schedule``: the GPU
    path's ``direct-send`` or ``binary-swap`` (``auto``: :func:`pick_schedule`). Each frame's camera is
    framed on that frame's box, as ``headrace render --frame``'s. ``job``: the ranks that share the frames
    (default: the whole job; ``Ranks()``: this process alone)."""

    def __init__(self, source: Any, *, device: int | str | None = "cpu", camera: str = "orbit:30,20",
                 field: str = "particles", width: int = 1024, height: int = 768, fov: float = 45.0,
                 background: tuple[int, int, int] = (0, 0, 0), compositing: str = "auto", schedule: str = "auto",
                 job: Ranks | None = None) -> None:
        self.job = job or ranks()
        self.dataset = source if hasattr(source, "read") else headrace.open(os.fspath(source))
        self.dataset.field(field)
        given = self.job.device(device)
        self.ordinal = None if given in (None, "cpu") else int(given)  # type: ignore[arg-type]  # a GPU number here
        self.field, self.camera, self.width, self.height, self.fov = field, camera, width, height, fov
        self.background = packed_background(background)
        self.communicator, self.compositing = choose_compositing(self.job, self.ordinal, compositing)
        nodes = max(1, self.job.size // max(1, self.job.local_size))
        self.schedule = pick_schedule(self.job.size, width, height, schedule, nodes) if self.communicator is not None else "mpi"
        self._renderer: Any = None
        self._buffer: Any = None  # the frame buffer, kept for the next frame
        self._stream = _ext.CudaStream(self.ordinal) if self.ordinal is not None else None
        self._compositor = _ext.DepthCompositor(self.communicator, width, height) if self.communicator is not None else None

    def render(self, frame: int) -> tuple[np.ndarray | None, dict[str, Any]]:
        """Frame ``frame``: (the image on rank 0, None elsewhere; this rank's statistics: its share, the times of
        its load, draw, wait for the other ranks and compositing, and where compositing ran)."""
        ds, job = self.dataset, self.job
        expect_frame(ds, frame)
        mine = share_chunks(ds, frame, self.field, job.size)[job.rank]
        table = ds.chunk_columns
        rows = frame_chunks(ds.container, frame, self.field)
        firsts = [int(table["first_element"][rows[c]]) for c in mine]
        counts = [int(table["raw_size"][rows[c]]) // 32 for c in mine]
        started = time.perf_counter()
        total = sum(counts)
        buffer = self._buffer = read_chunks(ds, frame, self.field, mine, self.ordinal, total * 32, self._buffer)
        loaded = time.perf_counter()
        view = camera_spec(self.width, self.height, self.fov, **parse_camera(self.camera, view_box(ds, frame, self.field)))
        if self._renderer is None:
            self._renderer = _ext.FrameRenderer(view, self.background, -1 if self.ordinal is None else self.ordinal)
        else:
            self._renderer.set_camera(view)
        renderer, handle = self._renderer, self._stream.handle if self._stream is not None else 0
        renderer.clear(handle)
        at = 0
        for first, count in zip(firsts, counts):
            if self.ordinal is not None:
                renderer.draw_device(buffer.pointer + at * 32, count, first, handle)
            else:
                renderer.draw_host(buffer.view(np.float32).reshape(-1, 8)[at:at + count], first)
            at += count
        if self._stream is not None:
            self._stream.synchronize()
        drawn = time.perf_counter()
        job.barrier()  # what compositing costs, apart from waiting for the slowest rank's draw
        ready = time.perf_counter()
        if job.size == 1:
            result = renderer.image(handle)
        elif self._compositor is not None:
            result = self._compositor.composite(renderer, self.schedule, handle)
        else:
            result = composite_by_depth(job, renderer.keys(handle), renderer.image(handle), self.background)
        done = time.perf_counter()
        stats = {"rank": job.rank, "ranks": job.size, "chunks": len(mine), "particles": total, "load_s": loaded - started,
                 "draw_s": drawn - loaded, "wait_s": ready - drawn, "composite_s": done - ready,
                 "device": "cpu" if self.ordinal is None else self.ordinal, "compositing": self.compositing,
                 "schedule": self.schedule}
        return result, stats


def render_particles(source: Any, frame: int = 0, *, device: int | str | None = "cpu", camera: str = "orbit:30,20",
                     field: str = "particles", width: int = 1024, height: int = 768, fov: float = 45.0,
                     background: tuple[int, int, int] = (0, 0, 0), compositing: str = "auto",
                     schedule: str = "auto") -> tuple[np.ndarray | None, dict[str, Any]]:
    """Frame ``frame`` drawn by every rank of the job and composited (:class:`ParticleShares`, set up for this
    one frame): (the image on rank 0, None elsewhere; this rank's statistics). With one rank it is the whole
    frame on this rank. The camera is framed on the frame's box, as ``headrace render``'s."""
    return ParticleShares(source, device=device, camera=camera, field=field, width=width, height=height, fov=fov,
                          background=background, compositing=compositing, schedule=schedule).render(frame)
