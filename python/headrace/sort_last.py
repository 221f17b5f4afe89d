"""Sort-last rendering over MPI: each rank draws its share of a frame, the images are composited.

    image, stats = headrace.sort_last.render_particles(ds, frame=0, device=0)   # under mpirun; the image on rank 0
    image, stats = headrace.sort_last.render_volume("amr.hrc", frame=0, device=0, tf="magma")

A particle frame is shared by space: its chunks sorted along the longest axis of the frame's box by their
centres (the index records each chunk's value ranges) and cut into one contiguous run a rank, the runs'
particle counts within a chunk of each other. Each rank reads its chunks through its engine (packed into
one buffer) and draws them with their numbers in the frame, so that every pixel's depth key (the ray
depth's bits, then the particle's number) means the same on every rank. Compositing keeps, per pixel, the
least key of all ranks (an MPI allreduce with MIN) and the colour of the rank that drew it (a reduce with
bitwise OR, every other rank giving 0): the image is the single-rank image, bit for bit, since a key
decides a pixel alone and ties go to the lower number on every rank alike (sphere_glyphs_shared.hpp).

A volume or AMR frame is shared by space too: the renderer's region grid cut along z into slabs of whole
region layers with about equal cells (``VolumeTopology.cut_slabs``), one a rank in order. A rank reads only
the chunks that hold its bricks' cells in its slab and the region layer either side (its ghost: what the
tent reconstruction, the gradient and the ray's state at the slab's entry need), packed into one buffer,
and ray-marches its slab alone on the whole grid's sample positions into premultiplied colour and opacity.
Compositing is direct send: each rank owns a band of image rows, receives every rank's layer of its band
(an all-to-all), composites them front to back in each ray's order along z (``_ext.composite_layers``,
the math the renderer shares with its kernels) and rank 0 gathers the bands. The image equals the
single-rank image up to rounding (the tests hold it to 2 levels on all but 0.2 % of the channels).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from headrace import _ext
from headrace.distributed import Ranks, ranks

__all__ = ["frame_chunks", "share_chunks", "composite_by_depth", "render_particles", "chunks_holding", "composite_front_to_back",
           "VolumeSlabs", "render_volume"]

NO_KEY = np.iinfo(np.int64).max  # where a rank drew nothing, in the signed keys compositing reduces


def frame_chunks(container: Any, frame: int, field: str) -> np.ndarray:
    """The chunk numbers of one frame's field (the index keeps them together, in order)."""
    _, first, count = container.frame_field(frame, container.field_index(field))
    return np.arange(first, first + count)


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
    import headrace
    from headrace.render import _camera, _expect_frame, _packed, parse_camera, view_box

    job = ranks()
    ds = source if hasattr(source, "read") else headrace.open(os.fspath(source))
    _expect_frame(ds, frame)
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
    buffer = _read_chunks(ds, frame, field, mine, ordinal, total * 32)
    loaded = time.perf_counter()
    view = _camera(width, height, fov, **parse_camera(camera, view_box(ds, frame, field)))
    renderer = _ext.FrameRenderer(view, _packed(background), -1 if ordinal is None else ordinal)
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
    result = image if job.size == 1 else composite_by_depth(job, keys, image, _packed(background))
    done = time.perf_counter()
    stats = {"rank": job.rank, "ranks": job.size, "chunks": len(mine), "particles": total, "load_s": loaded - started,
             "draw_s": drawn - loaded, "wait_s": ready - drawn, "composite_s": done - ready,
             "device": "cpu" if ordinal is None else ordinal}
    return result, stats


def _read_chunks(ds: Any, frame: int, field: str, positions: list[int], ordinal: int | None, size: int) -> Any:
    """Chunks of a frame's field (positions among its chunks), read through the engine of GPU ``ordinal``
    (or the host's) and packed in that order into a GPU buffer or a host byte array of ``size`` bytes."""
    import headrace

    engine = headrace.shared_engine(ordinal)
    queue = engine.queue
    file = engine.add_file(ds.path)
    size = max(size, 32)
    buffer: Any = _ext.DeviceBuffer(ordinal, size) if ordinal is not None else np.empty(size, dtype=np.uint8)
    requests = queue.enqueue_chunk_list(file, ds, frame, field, positions, buffer)
    fence = queue.enqueue_signal()
    queue.submit()
    fence.wait()
    queue.summarize(requests).raise_first_failure()
    return buffer


def chunks_holding(container: Any, frame: int, field: str, runs: np.ndarray) -> tuple[list[int], np.ndarray]:
    """The chunks of a frame's field that hold the element runs ((first, count) rows, ascending): their
    positions among the frame's chunks and their own runs, (first element, element count) rows."""
    table = container.chunk_table()
    rows = frame_chunks(container, frame, field)
    firsts = table["first_element"][rows].astype(np.uint64)
    counts = (table["raw_size"][rows] // container.fields[container.field_index(field)].element_bytes).astype(np.uint64)
    # The chunks from the one holding a run's first element to the one holding its last, marked as ranges
    # (+1 where a range starts, -1 past its end) and summed: no Python loop over a frame's many bricks.
    edges = np.zeros(rows.size + 1, dtype=np.int64)
    if len(runs):
        np.add.at(edges, np.searchsorted(firsts, runs[:, 0], side="right") - 1, 1)
        np.add.at(edges, np.searchsorted(firsts, runs[:, 0] + runs[:, 1] - 1, side="right"), -1)
    wanted = np.cumsum(edges[:-1]) > 0
    picked = np.flatnonzero(wanted)
    return [int(p) for p in picked], np.stack([firsts[picked], counts[picked]], axis=1)


def composite_front_to_back(job: Ranks, layer: np.ndarray, camera: Any, background: int) -> np.ndarray | None:
    """The image (height, width, 4) uint8 on rank 0 (None elsewhere) from every rank's layer of premultiplied
    RGBA (height, width, 4) float32, ranks in slab order along z: direct send of bands of rows, each band
    composited by the rank that owns it, the bands gathered on rank 0."""
    if job.comm is None:
        return _ext.composite_layers(layer[np.newaxis], camera, 0, background)
    height, width = layer.shape[:2]
    band = -(-height // job.size)
    padded = np.zeros((job.size * band, width, 4), dtype=np.float32)
    padded[:height] = layer
    received = np.empty_like(padded)
    job.comm.Alltoall(padded, received)  # band k of every rank's layer to rank k, in rank (slab) order
    first = job.rank * band
    rows = max(0, min(band, height - first))
    mine = np.zeros((band, width, 4), dtype=np.uint8)
    if rows:
        slabs = np.ascontiguousarray(received.reshape(job.size, band, width, 4)[:, :rows])
        mine[:rows] = _ext.composite_layers(slabs, camera, first, background)
    image = np.empty((job.size * band, width, 4), dtype=np.uint8) if job.root else None
    job.comm.Gather(mine, image, root=0)
    return image[:height] if image is not None else None


class VolumeSlabs:
    """A volume or AMR field drawn by every rank of the job, a slab each, and composited front to back: the
    renderer, this rank's slab and the runs of a frame it needs set up once, for every frame drawn.
    ``options`` are :class:`headrace.volume.VolumeRenderer`'s (mode, tf, opacity, camera, width, height,
    ...), the same on every rank. With one rank its slab is the whole grid."""

    def __init__(self, source: Any, *, device: int | str | None = "cpu", field: str | None = None, **options: Any) -> None:
        import headrace
        from headrace.volume import VolumeRenderer

        self.job = ranks()
        self.dataset = source if hasattr(source, "read") else headrace.open(os.fspath(source))
        given = self.job.device(device)
        self.ordinal = None if given in (None, "cpu") else int(given)  # type: ignore[arg-type]  # a GPU number here
        self.renderer = VolumeRenderer(self.dataset, field=field, device="cpu" if self.ordinal is None else self.ordinal,
                                       **options)
        first, last = self.renderer.topology.cut_slabs(self.job.size)[self.job.rank]
        self.layers = (int(first), int(last))
        self._runs = self.renderer.topology.slab_cells(first, last)
        self._held: np.ndarray | None = None

    def render(self, frame: int) -> tuple[np.ndarray | None, dict[str, Any]]:
        """Frame ``frame``: (the image on rank 0, None elsewhere; this rank's statistics, the times of its load,
        draw, wait for the other ranks and compositing)."""
        from headrace.render import _expect_frame

        ds, job, renderer = self.dataset, self.job, self.renderer
        _expect_frame(ds, frame)
        started = time.perf_counter()
        positions, held = chunks_holding(ds.container, frame, renderer.field, self._runs)
        if self._held is None or not np.array_equal(held, self._held):  # frames chunked alike share one topology
            renderer.share_slab(self.layers[0], self.layers[1], held)
            self._held = held
        cells = int(held[:, 1].sum()) if len(held) else 0
        buffer = _read_chunks(ds, frame, renderer.field, positions, self.ordinal, cells * 4)
        loaded = time.perf_counter()
        layer = renderer.layer_of(buffer if self.ordinal is not None else buffer.view(np.float32)[:cells])
        drawn = time.perf_counter()
        job.barrier()  # what compositing costs, apart from waiting for the slowest rank's draw
        ready = time.perf_counter()
        image = composite_front_to_back(job, layer, renderer.camera, renderer.background)
        done = time.perf_counter()
        stats = {"rank": job.rank, "ranks": job.size, "layers": self.layers, "chunks": len(positions), "cells": cells,
                 "load_s": loaded - started, "draw_s": drawn - loaded, "wait_s": ready - drawn, "composite_s": done - ready,
                 "device": "cpu" if self.ordinal is None else self.ordinal}
        return image, stats


def render_volume(source: Any, frame: int = 0, *, device: int | str | None = "cpu", field: str | None = None,
                  **options: Any) -> tuple[np.ndarray | None, dict[str, Any]]:
    """Frame ``frame`` of a volume or AMR field drawn by every rank of the job, a slab each, and composited
    front to back (:class:`VolumeSlabs`, set up for this one frame): (the image on rank 0, None elsewhere;
    this rank's statistics)."""
    return VolumeSlabs(source, device=device, field=field, **options).render(frame)
