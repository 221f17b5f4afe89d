"""The flow layouts the tracer reads: native blocks (sized to fit a cache, :func:`fitted_block`) and
the Hilbert layout (:func:`fitted_hilbert_bits`), and rewriting a flow into them."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from functools import partial
from typing import Any, Callable

import numpy as np

import headrace
from headrace import _ext
from headrace.errors import UsageError
from headrace.grid_layouts import DEFAULT_BLOCK, TARGET_CHUNK_BYTES, default_block, padded_to, to_blocks
from headrace.workloads.streamlines.flow import (POINT_BYTES, blocks_text, grid_of, sides_text, velocity_dtype,
                                                 velocity_grid, velocity_of)
from headrace.workloads.streamlines.notes import say_note

__all__ = ["DEFAULT_BLOCK", "SMALLEST_BLOCK_SIDE", "UNITS_WANTED", "UNITS_NEEDED", "fitted_block",
           "DEFAULT_HILBERT_BITS", "fitted_hilbert_bits", "convert_to_hilbert", "convert_linear_flow"]


SMALLEST_BLOCK_SIDE = 2  # a block of fewer points a side than a cell has corners is not worth its lookup
UNITS_WANTED = 64  # blocks a cache should hold when blocks are made to fit it: a step's cells, and room to spare
UNITS_NEEDED = 8  # the least: the corners of one cell (the resident tracer's floor), one per bank too


def fitted_block(dims: Sequence[int], cache_bytes: int | None = None, banks: int = 1,
                 label: str = "the flow") -> tuple[tuple[int, int, int], str | None]:
    """Native blocks for a flow of ``dims`` (x, y, z) made on the fly for a cache of ``cache_bytes``
    (``None``: no cache, :func:`default_block`), and why they are smaller than that, if they are: the
    largest side halved until the cache holds :data:`UNITS_WANTED` blocks (one per bank at least), no side
    below :data:`SMALLEST_BLOCK_SIDE`. A ``UsageError`` names the smallest ``--cache-bytes`` that works when
    even those hold fewer than :data:`UNITS_NEEDED` (or ``banks``)."""
    block = list(default_block(dims))
    if cache_bytes is None:
        return (block[0], block[1], block[2]), None
    first = tuple(block)

    def held(sides: Sequence[int]) -> int:
        return int(cache_bytes) // (POINT_BYTES * int(np.prod(sides)))

    wanted, needed = max(UNITS_WANTED, banks), max(UNITS_NEEDED, banks)
    while held(block) < wanted and max(block) > SMALLEST_BLOCK_SIDE:
        axis = 2 - int(np.argmax(block[::-1]))  # z first: rows along x stay long
        block[axis] = max(SMALLEST_BLOCK_SIDE, (block[axis] + 1) // 2)
    if held(block) < needed:
        least = needed * POINT_BYTES * int(np.prod(block))
        raise UsageError(f"{label}: --cache-bytes {cache_bytes:,} holds {blocks_text(held(block))} of even "
                         f"{sides_text(block)} points ({POINT_BYTES * int(np.prod(block)):,} bytes); a trace needs "
                         f"{needed}"
                         f"{f' (one per bank: --banks {banks})' if banks > UNITS_NEEDED else ''}: --cache-bytes {least} "
                         "or more")
    fitted = (block[0], block[1], block[2])
    if fitted == first:
        return fitted, None
    return fitted, (f"--cache-bytes {cache_bytes:,} holds {blocks_text(held(first))} of {sides_text(first)} points, "
                    f"so blocks of {sides_text(fitted)} ({held(fitted):,} of them fit)")


DEFAULT_HILBERT_BITS = 6  # partitions of 64 points a side when none is asked for


def fitted_hilbert_bits(dims: Sequence[int], bits: int | None = None, *, label: str = "the flow",
                        say: Callable[[str], None] | None = None) -> int:
    """Hilbert partitions of ``2**bits`` points a side for a grid of ``dims``: ``bits`` when it fits (a
    partition no larger than the grid's largest side), else a ``UsageError`` naming ``--hilbert-bits`` and
    the largest value that fits; ``None``: :data:`DEFAULT_HILBERT_BITS`, or the largest that fits a smaller
    grid, told to ``say`` (default: a :class:`TraceNote` warning)."""
    largest = max(int(d) for d in dims)
    fits = max(1, largest.bit_length() - 1)  # 2**fits <= largest side (a grid has 2 or more points a side)
    if bits is None:
        if fits < DEFAULT_HILBERT_BITS:
            (say or say_note)(f"{label}: Hilbert partitions of {1 << fits} points a side (--hilbert-bits {fits}), the "
                           f"largest that fit its {sides_text(dims)} grid (the default is {1 << DEFAULT_HILBERT_BITS})")
            return fits
        return DEFAULT_HILBERT_BITS
    if not 1 <= bits <= fits:
        raise UsageError(f"{label}: Hilbert partitions of {1 << bits} points a side do not fit its {sides_text(dims)} "
                         f"grid (no larger than its largest side, {largest}): --hilbert-bits {fits} or less")
    return int(bits)


def convert_to_hilbert(source: os.PathLike | str, output: os.PathLike | str, *, bits: int | None = None,
                       chunk_pages: int = 96, progress: Any = None, say: Callable[[str], None] | None = None) -> float:
    """Rewrites a native-block flow container in the Hilbert layout (partitions of 2**bits points a side,
    :func:`fitted_hilbert_bits`; chunks of ``chunk_pages`` pages, a multiple of 3); returns the seconds it
    took."""
    dims, _, _ = grid_of(source)
    bits = fitted_hilbert_bits([int(d) for d in dims], bits, label=os.fspath(source), say=say)
    return _ext.convert_blocks_to_hilbert(os.fspath(source), os.fspath(output), int(bits), int(chunk_pages), progress)


def convert_linear_flow(source: os.PathLike | str, output: os.PathLike | str, *, layout: str, block: Any = None,
                        bits: int | None = None, chunk_pages: int = 96, field: str | Sequence[str] | None = None,
                        say: Callable[[str], None] | None = None) -> float:
    """Rewrites a flow field stored in grid order (``layout = "linear"``: a grid ``headrace convert`` made)
    in native blocks of ``block`` points or in the Hilbert layout (:func:`fitted_hilbert_bits`); one frame
    at a time in memory. Returns the seconds it took. The velocity is ``field`` (:func:`velocity_of`: one
    field of 3 components or three scalar fields, of any floating type), stored as ``velocity``, float32
    x 3 (a cast said to ``say``, default a :class:`TraceNote` warning)."""
    started = time.perf_counter()
    ds = headrace.open(source)
    if ds.attributes.get("layout", "linear") != "linear" or "grid_dims" not in ds.attributes:
        raise UsageError(f"{source}: expected a grid in grid order (layout 'linear'); blocks go through "
                         "convert_to_hilbert")
    names = velocity_of(ds, field)
    dtype = velocity_dtype(ds, names)
    if dtype != "float32":
        (say or say_note)(f"{source}: velocity is {dtype}: stored as float32")
    nx, ny, nz = (int(d) for d in ds.attributes["grid_dims"])
    attributes = {k: v for k, v in ds.attributes.items() if k != "layout"}
    arrange: Callable[[np.ndarray], np.ndarray]  # a frame's (Z, Y, X, 3) grid -> its values in the new layout
    if layout == "blocks":
        block = tuple(int(b) for b in block or default_block((nx, ny, nz)))
        if len(block) != 3 or min(block) < 1 or any(b > d for b, d in zip(block, (nx, ny, nz))):
            raise UsageError(f"--block {list(block)}: three sizes from 1 to the grid's {[nx, ny, nz]} (partial blocks at "
                             "the edges are fine)")
        block_bytes = POINT_BYTES * block[0] * block[1] * block[2]
        chunk_bytes = max(1, TARGET_CHUNK_BYTES // block_bytes) * block_bytes  # whole blocks, as generate flow writes
        attributes.update(layout="blocks", block_dims=list(block))
        arrange = partial(to_blocks, block=block)
    elif layout == "hilbert":
        bits = fitted_hilbert_bits((nx, ny, nz), bits, label=os.fspath(source), say=say)
        side = 1 << bits
        if chunk_pages < 3 or chunk_pages % 3:
            raise UsageError(f"Hilbert chunks are a multiple of 3 pages (12 KiB holds 1024 whole points), got {chunk_pages}")
        order = _ext.hilbert_order(bits)
        chunk_bytes = chunk_pages * 4096
        attributes.update(layout="hilbert", hilbert_bits=[bits])
        arrange = partial(_hilbert_ordered, side=side, order=order)
    else:
        raise UsageError(f"layout {layout!r}: expected blocks or hilbert")
    with headrace.Writer(output, [headrace.FieldSpec("velocity", "float32", 3)], chunk_size_bytes=chunk_bytes) as writer:
        for key, value in attributes.items():
            writer.set_attribute(key, value)
        for frame in ds.frames:
            values = arrange(velocity_grid(ds, frame.index, names, (nz, ny, nx)))
            writer.write(writer.add_frame(time=frame.time, bbox=frame.bbox), "velocity", np.ascontiguousarray(values))
    return time.perf_counter() - started


def _hilbert_ordered(grid: np.ndarray, side: int, order: np.ndarray) -> np.ndarray:
    """A (Z, Y, X, 3) grid's values in partitions of ``side`` points a side (x fastest), each in
    ``order`` (the Hilbert curve's)."""
    grid = padded_to(grid, (side, side, side))  # partial partitions at the far edges, stored whole
    nz, ny, nx, _ = grid.shape
    cubes = grid.reshape(nz // side, side, ny // side, side, nx // side, side, 3).transpose(0, 2, 4, 1, 3, 5, 6)
    return cubes.reshape(-1, side**3, 3)[:, order, :].reshape(-1, 3)  # partitions x fastest, curve order
