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
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

import headrace
from headrace import _ext
from headrace.distributed import Ranks, ranks
from headrace.imaging import camera_spec, expect_frame, packed_background, parse_camera, view_box
from headrace.workloads.chunks import frame_chunks, read_chunks

__all__ = ["share_chunks", "composite_by_depth", "render_particles"]

NO_KEY = np.iinfo(np.int64).max  # where a rank drew nothing, in the signed keys compositing reduces


def share_chunks(ds: Any, frame: int, field: str, size: int) -> list[list[int]]:
    """Each rank's chunks of one frame's field (positions among the frame's chunks), by space: sorted by their
    centres along the frame's longest axis, cut into runs of about equal element counts."""
    container = ds.container
    table = container.chunk_table()
    rows = frame_chunks(container, frame, field)
    if rows.size == 0:
        return [[] for _ in range(size)]
    ranges = [container.chunk_range(int(k)) for k in rows]
    lows = np.array([r[0][:3] for r in ranges], dtype=np.float64)
    highs = np.array([r[1][:3] for r in ranges], dtype=np.float64)
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


def render_particles(source: Any, frame: int = 0, *, device: int | str | None = "cpu", camera: str = "orbit:30,20",
                     field: str = "particles", width: int = 1024, height: int = 768, fov: float = 45.0,
                     background: tuple[int, int, int] = (0, 0, 0)) -> tuple[np.ndarray | None, dict[str, Any]]:
    """Frame ``frame`` drawn by every rank of the job and composited: (the image on rank 0, None elsewhere;
    this rank's statistics). With one rank it is the whole frame on this rank. The camera is framed on the
    frame's box, as ``headrace render``'s."""
    job = ranks()
    ds = source if hasattr(source, "read") else headrace.open(os.fspath(source))
    expect_frame(ds, frame)
    ds.field(field)
    given = job.device(device)
    ordinal = None if given in (None, "cpu") else int(given)  # type: ignore[arg-type]  # a GPU number here
    mine = share_chunks(ds, frame, field, job.size)[job.rank]
    table = ds.container.chunk_table()
    rows = frame_chunks(ds.container, frame, field)
    firsts = [int(table["first_element"][rows[c]]) for c in mine]
    counts = [int(table["raw_size"][rows[c]]) // 32 for c in mine]
    started = time.perf_counter()
    total = sum(counts)
    buffer = read_chunks(ds, frame, field, mine, ordinal, total * 32)
    loaded = time.perf_counter()
    view = camera_spec(width, height, fov, **parse_camera(camera, view_box(ds, frame, field)))
    renderer = _ext.FrameRenderer(view, packed_background(background), -1 if ordinal is None else ordinal)
    stream = _ext.CudaStream(ordinal) if ordinal is not None else None
    handle = stream.handle if stream is not None else 0
    renderer.clear(handle)
    at = 0
    for first, count in zip(firsts, counts):
        if ordinal is not None:
            renderer.draw_device(buffer.pointer + at * 32, count, first, handle)
        else:
            renderer.draw_host(buffer.view(np.float32).reshape(-1, 8)[at:at + count], first)
        at += count
    keys, image = renderer.keys(handle), renderer.image(handle)
    drawn = time.perf_counter()
    job.barrier()  # what compositing costs, apart from waiting for the slowest rank's draw
    ready = time.perf_counter()
    result = image if job.size == 1 else composite_by_depth(job, keys, image, packed_background(background))
    done = time.perf_counter()
    stats = {"rank": job.rank, "ranks": job.size, "chunks": len(mine), "particles": total, "load_s": loaded - started,
             "draw_s": drawn - loaded, "wait_s": ready - drawn, "composite_s": done - ready,
             "device": "cpu" if ordinal is None else ordinal}
    return result, stats
