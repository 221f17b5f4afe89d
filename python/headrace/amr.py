"""Block-structured AMR whose topology is fixed over time (seed ``003_…``): levels of boxes of cells.

A container with ``layout = "amr"`` stores the topology once, in attributes (docs/format.md, section 5.9),
and each frame's scalars *pre-flattened in brick order* (seed 003, section 5.5): brick 0's cells x
fastest, then y, then z, then brick 1's, and so on, so a frame streams into GPU memory with no CPU pass.

- ``amr_domain_cells = [NX, NY, NZ]``: the domain in level-0 cells (lower corner at cell 0).
- ``amr_refinement = [r1, ...]``: the ratio between level ``l - 1`` and level ``l`` (one per level past 0).
- ``grid_origin``, ``grid_spacing``: world position of the domain's lower corner and a level-0 cell's size.
- ``amr_bricks = [level, x, y, z, nx, ny, nz, ...]``: seven integers per brick, its lower corner in its
  level's cell indices and its size in cells.

Bricks hold *leaf* cells only: no two bricks overlap in space (a coarse cell under finer ones is not
stored), each lies inside the domain, and together they may leave holes (cells that hold no data, as
around the Exajet's aircraft). Every frame of every field holds exactly ``cell_count`` elements of one
component. :func:`leaf_bricks` turns AMReX-style levels of boxes (coarse cells under fine ones included)
into such bricks.

A structured grid (``layout`` ``linear``) is the one-brick, one-level case: its points are the cells'
centres (:func:`grid_topology`), so the same renderer draws both.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from headrace import _ext
from headrace.errors import CorruptIndexError, UsageError

__all__ = ["AmrTopology", "Block", "BRICK_INTEGERS", "bricks_array", "describe", "grid_topology", "leaf_bricks", "topology_of"]

BRICK_INTEGERS = 7  # level, lower x, y, z, size x, y, z
MOST_LEVELS = 32


@dataclass(frozen=True)
class Block:
    """One brick with its data, as ANARI's ``amr`` spatial field takes it: the level, the cell box in
    that level's indices (``lower`` inclusive, ``upper`` exclusive, x y z), the world bounds, and the
    cells as a dense ``(nz, ny, nx)`` array."""

    level: int
    lower: tuple[int, int, int]
    upper: tuple[int, int, int]
    world_lower: tuple[float, float, float]
    world_upper: tuple[float, float, float]
    data: np.ndarray


def _triple(values: Sequence[Any], kind: type) -> tuple[Any, Any, Any]:
    x, y, z = (kind(v) for v in values)
    return x, y, z


@dataclass(frozen=True)
class AmrTopology:
    """The fixed topology: ``bricks`` is an ``(B, 7)`` int64 array (level, lower xyz, size xyz)."""

    domain_cells: tuple[int, int, int]
    refinement: tuple[int, ...]
    origin: tuple[float, float, float]
    spacing: tuple[float, float, float]
    bricks: np.ndarray

    @property
    def levels(self) -> int:
        return len(self.refinement) + 1

    def scale(self, level: int) -> int:
        """Cells of ``level`` along one level-0 cell."""
        return math.prod(self.refinement[:level])

    def cell_size(self, level: int) -> tuple[float, float, float]:
        s = self.scale(level)
        return _triple([h / s for h in self.spacing], float)

    @cached_property
    def brick_cells(self) -> np.ndarray:
        return np.prod(self.bricks[:, 4:7], axis=1)

    @cached_property
    def offsets(self) -> np.ndarray:
        """Where each brick's cells start in a frame, then the frame's cell count: ``(B + 1,)`` int64."""
        return np.concatenate([[0], np.cumsum(self.brick_cells)]).astype(np.int64)

    @property
    def cell_count(self) -> int:
        return int(self.offsets[-1])

    @property
    def world_bounds(self) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
        upper = [o + n * h for o, n, h in zip(self.origin, self.domain_cells, self.spacing)]
        return self.origin, _triple(upper, float)

    def brick_world_bounds(self, brick: int) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
        level, x, y, z, nx, ny, nz = (int(v) for v in self.bricks[brick])
        h = self.cell_size(level)
        lower = [o + i * c for o, i, c in zip(self.origin, (x, y, z), h)]
        upper = [o + (i + n) * c for o, i, n, c in zip(self.origin, (x, y, z), (nx, ny, nz), h)]
        return _triple(lower, float), _triple(upper, float)

    def attributes(self) -> dict[str, Any]:
        """The container attributes that store this topology (with ``layout = "amr"``)."""
        return {
            "layout": "amr",
            "amr_domain_cells": list(self.domain_cells),
            "amr_refinement": list(self.refinement),
            "grid_origin": list(self.origin),
            "grid_spacing": list(self.spacing),
            "amr_bricks": self.bricks.reshape(-1).tolist(),
        }

    def validate(self, where: str) -> None:
        """Raise ``UsageError`` naming ``where`` and the first brick that breaks a rule of the module
        docstring: level, size, inside the domain; overlaps are checked by :meth:`check_overlaps`."""
        if len(self.domain_cells) != 3 or min(self.domain_cells) < 1:
            raise UsageError(f"{where}: the domain needs three sizes of at least one cell, got {list(self.domain_cells)}")
        if self.levels > MOST_LEVELS or any(r < 2 for r in self.refinement):
            raise UsageError(f"{where}: refinement ratios must be at least 2, at most {MOST_LEVELS - 1} of them, "
                             f"got {list(self.refinement)}")
        if not all(h > 0 and math.isfinite(h) for h in self.spacing) or not all(math.isfinite(o) for o in self.origin):
            raise UsageError(f"{where}: grid_spacing must be positive and finite, grid_origin finite")
        b = self.bricks
        if b.ndim != 2 or b.shape[1] != BRICK_INTEGERS or len(b) == 0:
            raise UsageError(f"{where}: amr_bricks must hold seven integers per brick and at least one brick")
        scales = np.array([self.scale(level) for level in range(self.levels)], dtype=np.int64)
        bad_level = (b[:, 0] < 0) | (b[:, 0] >= self.levels)
        level = np.clip(b[:, 0], 0, self.levels - 1)
        extent = np.asarray(self.domain_cells, dtype=np.int64)[None, :] * scales[level][:, None]
        bad = bad_level | (b[:, 4:7] < 1).any(axis=1) | (b[:, 1:4] < 0).any(axis=1) | (b[:, 1:4] + b[:, 4:7] > extent).any(axis=1)
        if bad.any():
            first = int(np.argmax(bad))
            raise UsageError(f"{where}: brick {first} (level, lower, size = {b[first].tolist()}) lies outside the "
                             f"domain of {list(self.domain_cells)} level-0 cells, or has a level outside 0..{self.levels - 1}"
                             " or an empty size")

    def check_overlaps(self, where: str) -> None:
        """Raise ``UsageError`` naming the first two bricks that share a cell (bricks hold leaf cells only)."""
        pair = _ext.overlapping_bricks(self.bricks, list(self.refinement))
        if pair is not None:
            a, b = pair
            raise UsageError(f"{where}: bricks {a} {self.bricks[a].tolist()} and {b} {self.bricks[b].tolist()} "
                             "(level, lower, size) overlap; bricks hold leaf cells only")

    def blocks(self, values: np.ndarray) -> list[Block]:
        """The frame ``values`` (``cell_count`` scalars in brick order) as a list of :class:`Block`."""
        flat = np.asarray(values).reshape(-1)
        if flat.size != self.cell_count:
            raise UsageError(f"a frame of this topology holds {self.cell_count} cells, got {flat.size} values")
        out = []
        for index, (level, x, y, z, nx, ny, nz) in enumerate(self.bricks.tolist()):
            lower, upper = self.brick_world_bounds(index)
            data = flat[self.offsets[index]:self.offsets[index + 1]].reshape(nz, ny, nx)
            out.append(Block(level, (x, y, z), (x + nx, y + ny, z + nz), lower, upper, data))
        return out


def _integers(attributes: Mapping[str, Any], name: str, where: str) -> list[int]:
    value = attributes.get(name)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, (int, np.integer)) for v in value):
        raise CorruptIndexError(f"{where}: attribute {name!r} must be an integer array for layout 'amr', found {value!r:.80}")
    return [int(v) for v in value]


def _reals(attributes: Mapping[str, Any], name: str, where: str, default: Sequence[float]) -> list[float]:
    value = attributes.get(name, list(default))
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise CorruptIndexError(f"{where}: attribute {name!r} must hold three numbers, found {value!r:.80}")
    return [float(v) for v in value]


def grid_topology(dims: Sequence[int], origin: Sequence[float] = (0.0, 0.0, 0.0),
                  spacing: Sequence[float] = (1.0, 1.0, 1.0)) -> AmrTopology:
    """A structured grid of ``dims`` points as one level-0 brick whose cells are centred on the points."""
    d = _triple(dims, int)
    h = _triple(spacing, float)
    o = _triple([p - s / 2 for p, s in zip(origin, h)], float)
    return AmrTopology(d, (), o, h, np.array([[0, 0, 0, 0, *d]], dtype=np.int64))


def topology_of(attributes: Mapping[str, Any], where: str) -> AmrTopology | None:
    """The topology a container's attributes describe: ``layout`` ``amr``, or a ``linear`` grid (one
    brick); ``None`` for data that is not a grid. ``where`` (the file) names errors."""
    layout = attributes.get("layout", "linear" if "grid_dims" in attributes else None)
    if layout == "amr":
        domain = _integers(attributes, "amr_domain_cells", where)
        if len(domain) != 3:
            raise CorruptIndexError(f"{where}: attribute 'amr_domain_cells' must hold three sizes, found {domain}")
        flat = _integers(attributes, "amr_bricks", where)
        if len(flat) % BRICK_INTEGERS:
            raise CorruptIndexError(f"{where}: attribute 'amr_bricks' holds {len(flat)} integers, not seven per brick")
        topology = AmrTopology(
            _triple(domain, int),
            tuple(_integers(attributes, "amr_refinement", where) if "amr_refinement" in attributes else []),
            _triple(_reals(attributes, "grid_origin", where, (0, 0, 0)), float),
            _triple(_reals(attributes, "grid_spacing", where, (1, 1, 1)), float),
            np.asarray(flat, dtype=np.int64).reshape(-1, BRICK_INTEGERS),
        )
        try:
            topology.validate(where)
        except UsageError as error:
            raise CorruptIndexError(str(error)) from None
        return topology
    if layout == "linear" and "grid_dims" in attributes:
        return grid_topology(_integers(attributes, "grid_dims", where), _reals(attributes, "grid_origin", where, (0, 0, 0)),
                             _reals(attributes, "grid_spacing", where, (1, 1, 1)))
    if layout in ("blocks", "hilbert"):
        raise UsageError(f"{where}: a grid stored in layout {layout!r} cannot be drawn as a volume; convert it with "
                         "--layout linear (headrace convert) first")
    return None


Box = tuple[tuple[int, int, int], tuple[int, int, int]]  # lower inclusive, upper exclusive, x y z


def _subtract(box: Box, hole: Box) -> list[Box]:
    """``box`` minus ``hole``: at most six boxes, split along z, then y, then x."""
    (hlo, hhi) = hole
    if any(hlo[a] >= box[1][a] or hhi[a] <= box[0][a] for a in range(3)):
        return [box]
    pieces = []
    lo, hi = list(box[0]), list(box[1])
    for axis in (2, 1, 0):
        if lo[axis] < hlo[axis]:
            upper = list(hi)
            upper[axis] = hlo[axis]
            pieces.append((_triple(lo, int), _triple(upper, int)))
            lo[axis] = hlo[axis]
        if hi[axis] > hhi[axis]:
            lower = list(lo)
            lower[axis] = hhi[axis]
            pieces.append((_triple(lower, int), _triple(hi, int)))
            hi[axis] = hhi[axis]
    return pieces


def leaf_bricks(levels: Sequence[Sequence[Box]], refinement: Sequence[int]) -> list[tuple[int, Box]]:
    """Leaf cells of AMReX-style levels as bricks ``(level, box)``: each level's boxes (cells of that level,
    x y z, ``upper`` exclusive) minus the next level's boxes coarsened by the ratio between them. Boxes of
    one level must not overlap, and a fine box must cover whole coarse cells (AMReX's proper nesting
    guarantees both; the caller checks them)."""
    out: list[tuple[int, Box]] = []
    for level, boxes in enumerate(levels):
        holes: list[Box] = []
        if level + 1 < len(levels):
            r = refinement[level]
            holes = [(_triple([v // r for v in lo], int), _triple([-(-v // r) for v in hi], int)) for lo, hi in levels[level + 1]]
        hole_array = np.array([[*lo, *hi] for lo, hi in holes], dtype=np.int64).reshape(-1, 6)
        for box in boxes:
            lo, hi = np.asarray(box[0]), np.asarray(box[1])
            touching = np.nonzero(((hole_array[:, :3] < hi) & (hole_array[:, 3:] > lo)).all(axis=1))[0]
            pieces = [(_triple(box[0], int), _triple(box[1], int))]
            for h in touching:
                hole = (_triple(hole_array[h, :3].tolist(), int), _triple(hole_array[h, 3:].tolist(), int))
                pieces = [p for piece in pieces for p in _subtract(piece, hole)]
            out.extend((level, piece) for piece in pieces)
    return out


def bricks_array(leaves: Sequence[tuple[int, Box]]) -> np.ndarray:
    """``(B, 7)`` int64 brick rows of ``(level, box)`` pairs, as :attr:`AmrTopology.bricks` holds them."""
    rows = [[level, *lo, *(h - l for h, l in zip(hi, lo))] for level, (lo, hi) in leaves]
    return np.asarray(rows, dtype=np.int64).reshape(-1, BRICK_INTEGERS)


def describe(path: os.PathLike | str, topology: AmrTopology) -> str:
    """One line for ``headrace info``: levels, bricks, cells."""
    per_level = np.bincount(topology.bricks[:, 0], weights=topology.brick_cells, minlength=topology.levels)
    levels = ", ".join(f"L{i} {int(c):,}" for i, c in enumerate(per_level))
    return (f"{os.fspath(path)}: AMR of {topology.levels} levels, {len(topology.bricks):,} bricks, "
            f"{topology.cell_count:,} cells ({levels})")
