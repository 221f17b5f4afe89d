"""Where each point of a grid field is stored: the layouts a container's ``layout`` attribute names.

A grid of ``grid_dims = [X, Y, Z]`` points holds one element per point; an element's *position* is its
index among the frame's elements (stored order). Each layout maps both ways, vectorised:
``positions(z, y, x)`` gives the positions of grid points, ``points(start, stop)`` the grid points
``(z, y, x)`` of positions ``start .. stop - 1``.

- ``linear`` (or no ``layout`` attribute): x fastest, then y, then z (C order of a (Z, Y, X) array); BOV,
  ``.npy`` and ``headrace generate volume`` write it.
- ``blocks`` (``block_dims = [BX, BY, BZ]``): blocks one after another, x fastest, then y, then z;
  inside a block its points x fastest (``headrace generate flow``, ``--layout blocks``).
- ``hilbert`` (``hilbert_bits = [B]``): partitions of ``2^B`` points a side, x fastest, then y, then z;
  inside a partition its points along the 3-D Hilbert curve of ``_ext.hilbert_order`` (``--layout
  hilbert``; ``cpp/include/headrace/workloads/streamlines/unit_layouts.hpp`` is the same map in C++).

Where a block or partition does not divide the grid, the ones at the far edges are stored whole, padded
past the grid's edge: a frame holds ``element_count`` elements, more than the grid's points, and
``points`` also gives the padding's points (beyond ``dims``), which a reader drops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from headrace import _ext
from headrace.errors import CorruptIndexError, UsageError

__all__ = ["GridLayout", "LinearLayout", "BlockLayout", "HilbertLayout", "grid_layout_of", "DEFAULT_BLOCK",
           "TARGET_CHUNK_BYTES", "default_block", "padded_to", "to_blocks", "from_blocks"]

Points = tuple[np.ndarray, np.ndarray, np.ndarray]
MOST_HILBERT_BITS = 20  # the tracer's limit (unit_layouts.hpp)


class GridLayout:
    """A grid stored in units of ``unit = (UX, UY, UZ)`` points (rows, blocks, partitions), the units x
    fastest, then y, then z, each unit's points in its local order (x fastest unless a subclass says
    otherwise); units at the far edges are stored whole. ``dims`` is (X, Y, Z), as ``grid_dims``."""

    def __init__(self, dims: tuple[int, int, int], unit: tuple[int, int, int]) -> None:
        self.dims, self.unit = dims, unit
        self.units_across = tuple(-(-d // u) for d, u in zip(dims, unit))  # partial units too

    @property
    def unit_points(self) -> int:
        return self.unit[0] * self.unit[1] * self.unit[2]

    @property
    def element_count(self) -> int:
        """Elements a frame stores: the grid's points and any padding."""
        nx, ny, nz = self.units_across
        return nx * ny * nz * self.unit_points

    @cached_property
    def _local_points(self) -> Points:
        """``(z, y, x)`` within a unit of each of its stored points."""
        ux, uy, _ = self.unit
        rows, x = np.divmod(np.arange(self.unit_points, dtype=np.int64), ux)
        z, y = np.divmod(rows, uy)
        return z, y, x

    def _local_positions(self, local: np.ndarray) -> np.ndarray:
        """Where in its unit the point of index ``local`` (x fastest) is stored."""
        return local

    def positions(self, z: np.ndarray, y: np.ndarray, x: np.ndarray) -> np.ndarray:
        """The stored positions (int64) of the grid points ``(z, y, x)`` (broadcastable)."""
        ux, uy, uz = self.unit
        nx, ny, _ = self.units_across
        z, y, x = (np.asarray(a, np.int64) for a in (z, y, x))
        unit = x // ux + nx * (y // uy + ny * (z // uz))
        return unit * self.unit_points + self._local_positions(x % ux + ux * (y % uy + uy * (z % uz)))

    def points(self, start: int, stop: int) -> Points:
        """``(z, y, x)`` (int64) of the points stored at positions ``start .. stop - 1``, padding included:
        unit origins times the unit's local points, so the arithmetic per point is one addition."""
        if start >= stop:
            empty = np.empty(0, np.int64)
            return empty, empty, empty
        size = self.unit_points
        first, last = start // size, (stop - 1) // size + 1
        nx, ny, _ = self.units_across
        rest, unit_x = np.divmod(np.arange(first, last, dtype=np.int64), nx)
        unit_z, unit_y = np.divmod(rest, ny)
        keep = slice(start - first * size, stop - first * size)
        ux, uy, uz = self.unit
        z, y, x = ((origin[:, None] * side + local[None, :]).reshape(-1)[keep]
                   for origin, side, local in zip((unit_z, unit_y, unit_x), (uz, uy, ux), self._local_points))
        return z, y, x


class LinearLayout(GridLayout):
    """x fastest, then y, then z: units of one row."""

    def __init__(self, dims: tuple[int, int, int]) -> None:
        super().__init__(dims, (dims[0], 1, 1))


class BlockLayout(GridLayout):
    """Native blocks of ``block = (BX, BY, BZ)`` points, each a contiguous run (x fastest)."""

    def __init__(self, dims: tuple[int, int, int], block: tuple[int, int, int]) -> None:
        super().__init__(dims, block)


class HilbertLayout(GridLayout):
    """Partitions of ``2**bits`` points a side, each stored along the Hilbert curve."""

    def __init__(self, dims: tuple[int, int, int], bits: int) -> None:
        side = 1 << bits
        super().__init__(dims, (side, side, side))
        self.bits = bits

    @cached_property
    def _curve(self) -> np.ndarray:
        """The local index (x fastest) of the point at each step of the curve."""
        return np.asarray(_ext.hilbert_order(self.bits), dtype=np.int64)

    @cached_property
    def _local_points(self) -> Points:
        side = self.unit[0]
        rest, x = np.divmod(self._curve, side)
        z, y = np.divmod(rest, side)
        return z, y, x

    @cached_property
    def _step_of_point(self) -> np.ndarray:
        """The inverse of :attr:`_curve`: the curve's step at each local index."""
        steps = np.empty_like(self._curve)
        steps[self._curve] = np.arange(len(self._curve), dtype=np.int64)
        return steps

    def _local_positions(self, local: np.ndarray) -> np.ndarray:
        return self._step_of_point[local]


def _sizes(attributes: Mapping[str, Any], name: str, count: int, path: str) -> tuple[int, ...]:
    value = attributes.get(name)
    try:
        sizes = tuple(int(v) for v in value)  # type: ignore[union-attr]
    except (TypeError, ValueError):
        sizes = ()
    if len(sizes) != count or min(sizes) < 1:
        raise CorruptIndexError(f"{path}: attribute {name}: expected {count} positive integers, found {value!r}")
    return sizes


def grid_layout_of(attributes: Mapping[str, Any], path: str) -> GridLayout | None:
    """The grid layout the attributes describe, or None when they describe no grid (no ``grid_dims``)."""
    if "grid_dims" not in attributes:
        return None
    nx, ny, nz = _sizes(attributes, "grid_dims", 3, path)
    dims = (nx, ny, nz)
    layout = attributes.get("layout", "linear")
    if layout == "linear":
        return LinearLayout(dims)
    if layout == "blocks":
        bx, by, bz = _sizes(attributes, "block_dims", 3, path)
        return BlockLayout(dims, (bx, by, bz))
    if layout == "hilbert":
        (bits,) = _sizes(attributes, "hilbert_bits", 1, path)
        if bits > MOST_HILBERT_BITS:
            raise CorruptIndexError(f"{path}: attribute hilbert_bits: expected 1 to {MOST_HILBERT_BITS}, found {bits}")
        return HilbertLayout(dims, bits)
    raise UsageError(f"{path}: grid layout {layout!r} is not one headrace reads as a grid (linear, blocks, hilbert); "
                     "read(..., stored_order=True) gives its elements as stored")


# The blocks layout as `headrace generate flow` and `convert --layout blocks` write it.

# Chunk size aimed at when none is given (the writer's default but for gdeflate's 64 KiB), rounded down
# to whole blocks.
TARGET_CHUNK_BYTES = 4 << 20
DEFAULT_BLOCK = (32, 32, 32)  # points of a native block when none is asked for (seed 002's blocks are 32^3 to 64^3)


def default_block(dims: Sequence[int]) -> tuple[int, int, int]:
    """:data:`DEFAULT_BLOCK`, no larger than the grid (``dims`` x, y, z) along any axis."""
    x, y, z = (min(int(b), int(d)) for b, d in zip(DEFAULT_BLOCK, dims))
    return x, y, z


def padded_to(grid: np.ndarray, sides: Sequence[int]) -> np.ndarray:
    """A ``(Z, Y, X, c)`` grid grown with zeros to whole multiples of ``sides`` (x, y, z): partial blocks
    or partitions at the far edges stored whole (see the module docstring)."""
    nz, ny, nx = grid.shape[:3]
    grow = [(-n) % side for n, side in zip((nz, ny, nx), (sides[2], sides[1], sides[0]))]
    if not any(grow):
        return grid
    return np.pad(grid, [(0, grow[0]), (0, grow[1]), (0, grow[2])] + [(0, 0)] * (grid.ndim - 3))


def to_blocks(grid: np.ndarray, block: Sequence[int]) -> np.ndarray:
    """``(Z, Y, X, c)`` grid -> ``(elements, c)`` in block order (see the module docstring)."""
    bx, by, bz = block
    grid = padded_to(grid, block)
    nz, ny, nx, c = grid.shape
    blocked = grid.reshape(nz // bz, bz, ny // by, by, nx // bx, bx, c).transpose(0, 2, 4, 1, 3, 5, 6)
    return blocked.reshape(-1, c)


def from_blocks(values: np.ndarray, dims: Sequence[int], block: Sequence[int]) -> np.ndarray:
    """``(elements, c)`` in block order -> ``(Z, Y, X, c)`` grid; the inverse of :func:`to_blocks` (the
    padding of partial blocks dropped)."""
    nx, ny, nz = dims
    bx, by, bz = block
    nbx, nby, nbz = -(-nx // bx), -(-ny // by), -(-nz // bz)
    c = values.shape[-1]
    blocked = values.reshape(nbz, nby, nbx, bz, by, bx, c).transpose(0, 3, 1, 4, 2, 5, 6)
    return blocked.reshape(nbz * bz, nby * by, nbx * bx, c)[:nz, :ny, :nx]
