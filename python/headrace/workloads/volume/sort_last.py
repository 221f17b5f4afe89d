"""Sort-last rendering of a volume over MPI: each rank draws its slab of a frame, the layers are composited.

    image, stats = headrace.workloads.volume.sort_last.render_volume("amr.hrc", frame=0, device=0, tf="magma")

A volume or AMR frame is shared by space too: the renderer's region grid cut along z into slabs of whole
region layers with about equal cells (``VolumeTopology.cut_slabs``), one a rank in order. A rank reads only
the chunks that hold its bricks' cells in its slab and the region layer either side (its ghost: what the
tent reconstruction, the gradient and the ray's state at the slab's entry need), packed into one buffer,
and ray-marches its slab alone on the whole grid's sample positions into premultiplied colour and opacity.
Compositing is direct send: each rank owns a band of image rows, receives every rank's layer of its band
(an all-to-all), composites them front to back in each ray's order along z (``_ext.composite_layers``,
the math the renderer shares with its kernels) and rank 0 gathers the bands. The image equals the
single-rank image up to rounding (the tests hold it to 2 levels on all but 0.2 % of the channels).
When every rank draws on a GPU of its own and NCCL loads, the layers never leave the GPUs: the same
direct send runs over NCCL and a kernel composites each band (``_ext.LayerCompositor``), and only the
image comes to rank 0's host, equal to the host path's bit for bit.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

import headrace
from headrace import _ext
from headrace.distributed import Ranks, ranks
from headrace.imaging import expect_frame
from headrace.workloads.chunks import frame_chunks, read_chunks
from headrace.workloads.compositing import choose_compositing
from headrace.workloads.volume.renderer import VolumeRenderer

__all__ = ["chunks_holding", "composite_front_to_back", "VolumeSlabs", "render_volume"]


def chunks_holding(container: Any, frame: int, field: str, runs: np.ndarray,
                   table: dict[str, Any] | None = None) -> tuple[list[int], np.ndarray]:
    """The chunks of a frame's field that hold the element runs ((first, count) rows, ascending): their
    positions among the frame's chunks and their own runs, (first element, element count) rows. ``table``:
    the container's chunk table when the caller keeps it (``Dataset.chunk_columns``), else made here."""
    columns = table if table is not None else container.chunk_table()
    rows = frame_chunks(container, frame, field)
    firsts = columns["first_element"][rows].astype(np.uint64)
    counts = (columns["raw_size"][rows] // container.fields[container.field_index(field)].element_bytes).astype(np.uint64)
    # The chunks from the one holding a run's first element to the one holding its last, marked as ranges
    # (+1 where a range starts, -1 past its end) and summed: no Python loop over a frame's many bricks.
    starts = np.searchsorted(firsts, runs[:, 0], side="right") - 1
    ends = np.searchsorted(firsts, runs[:, 0] + runs[:, 1] - 1, side="right")
    edges = np.bincount(starts, minlength=rows.size + 1) - np.bincount(ends, minlength=rows.size + 1)
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
    ``options`` are :class:`headrace.workloads.volume.VolumeRenderer`'s (mode, tf, opacity, camera, width, height,
    ...), the same on every rank. With one rank its slab is the whole grid. ``compositing``: ``auto`` (on the
    GPUs over NCCL when every rank has its own GPU and NCCL, else through host memory over MPI), ``gpu`` or
    ``host`` (:mod:`headrace.workloads.compositing`); ``job``: the ranks that share the frames (default: the
    whole job; ``Ranks()``: this process alone)."""

    def __init__(self, source: Any, *, device: int | str | None = "cpu", field: str | None = None, compositing: str = "auto",
                 job: Ranks | None = None, **options: Any) -> None:
        self.job = job or ranks()
        self.dataset = source if hasattr(source, "read") else headrace.open(os.fspath(source))
        given = self.job.device(device)
        self.ordinal = None if given in (None, "cpu") else int(given)  # type: ignore[arg-type]  # a GPU number here
        self.renderer = VolumeRenderer(self.dataset, field=field, device="cpu" if self.ordinal is None else self.ordinal,
                                       **options)
        first, last = self.renderer.topology.cut_slabs(self.job.size)[self.job.rank]
        self.layers = (int(first), int(last))
        self._runs = self.renderer.topology.slab_cells(first, last)
        self._held: np.ndarray | None = None  # the runs of the frame buffer, its chunks' positions, their chunking
        self._positions: list[int] = []
        self._chunking: np.ndarray | None = None
        self._buffer: Any = None  # the frame buffer, kept for the next frame
        self.communicator, self.compositing = choose_compositing(self.job, self.ordinal, compositing)
        # On the GPUs: a stream of this rank's and the compositor, the layers never leaving GPU memory.
        self._on_gpus: tuple[Any, Any] | None = None
        if self.communicator is not None and self.ordinal is not None:
            self._on_gpus = (_ext.CudaStream(self.ordinal),
                             _ext.LayerCompositor(self.communicator, self.renderer.camera, self.renderer.background))

    def render(self, frame: int) -> tuple[np.ndarray | None, dict[str, Any]]:
        """Frame ``frame``: (the image on rank 0, None elsewhere; this rank's statistics, the times of its load,
        draw, wait for the other ranks and compositing)."""
        ds, job, renderer = self.dataset, self.job, self.renderer
        expect_frame(ds, frame)
        started = time.perf_counter()
        # Frames chunked alike (the index's chunks of the field at the same elements) hold this rank's runs
        # in the same chunks and share one slab topology: found once, not for every frame.
        rows = frame_chunks(ds.container, frame, renderer.field)
        chunking = np.stack([ds.chunk_columns["first_element"][rows], ds.chunk_columns["raw_size"][rows]])
        if self._chunking is None or not np.array_equal(chunking, self._chunking):
            self._positions, found = chunks_holding(ds.container, frame, renderer.field, self._runs, ds.chunk_columns)
            if self._held is None or not np.array_equal(found, self._held):
                renderer.share_slab(self.layers[0], self.layers[1], found)
                self._held = found
            self._chunking = chunking
        positions, held = self._positions, self._held
        assert held is not None
        cells = int(held[:, 1].sum()) if len(held) else 0
        buffer = self._buffer = read_chunks(ds, frame, renderer.field, positions, self.ordinal, cells * 4, self._buffer)
        loaded = time.perf_counter()
        layer = None  # on the GPUs, the layer stays in the renderer's GPU memory
        if self._on_gpus is not None:
            stream, compositor = self._on_gpus
            renderer.draw_layer(buffer, stream.handle)
            stream.synchronize()
        else:
            layer = renderer.layer_of(buffer if self.ordinal is not None else buffer.view(np.float32)[:cells])
        drawn = time.perf_counter()
        job.barrier()  # what compositing costs, apart from waiting for the slowest rank's draw
        ready = time.perf_counter()
        if self._on_gpus is not None:
            stream, compositor = self._on_gpus
            image = renderer.composited(compositor, stream.handle)
        else:
            assert layer is not None
            image = composite_front_to_back(job, layer, renderer.camera, renderer.background)
        done = time.perf_counter()
        stats = {"rank": job.rank, "ranks": job.size, "layers": self.layers, "chunks": len(positions), "cells": cells,
                 "load_s": loaded - started, "draw_s": drawn - loaded, "wait_s": ready - drawn, "composite_s": done - ready,
                 "device": "cpu" if self.ordinal is None else self.ordinal, "compositing": self.compositing}
        return image, stats


def render_volume(source: Any, frame: int = 0, *, device: int | str | None = "cpu", field: str | None = None,
                  compositing: str = "auto", **options: Any) -> tuple[np.ndarray | None, dict[str, Any]]:
    """Frame ``frame`` of a volume or AMR field drawn by every rank of the job, a slab each, and composited
    front to back (:class:`VolumeSlabs`, set up for this one frame): (the image on rank 0, None elsewhere;
    this rank's statistics)."""
    return VolumeSlabs(source, device=device, field=field, compositing=compositing, **options).render(frame)
