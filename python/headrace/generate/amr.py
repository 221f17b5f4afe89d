"""Time-varying AMR whose topology is fixed over time (``headrace generate amr``, seed ``003_…``).

**Field.** The moving blobs of :mod:`headrace.generate.volume` (:func:`~headrace.generate.volume.scalar_field`)
at the cell centres of the unit box: level-0 cell (i, j, k) spans ``[i, i + 1] * h`` per axis with
``h = 1 / level-0 cells`` (``grid_origin`` 0, ``grid_spacing`` h), a level-l cell is ``h / 2^l``. Frame f is
time f; field k of ``fields`` is the field of seed ``seed + k``. Values are float32 (computed in float64,
so each is the reference rounded once), one component per field, ``layout = "amr"`` (docs/format.md 5.9).

**Topology** (an octree of bricks, built once): level 0 is split into ``kx x ky x kz`` bricks of ``B^3``
cells (``B = brick``); a refined brick is replaced by the 8 bricks of ``B^3`` cells of the next level that
cover it (ratio 2). A brick's *variation* is the largest value range, over the fields and the sample
times :data:`VARIATION_TIMES` (every second frame of the blobs' period of 16 frames, so the topology suits
every frame), of the field at :data:`SAMPLES` x :data:`SAMPLES` x :data:`SAMPLES` points spread evenly
over the brick, corners included. Level by level, the ``R_l`` bricks of level l with the largest variation
are refined (ties: the earlier brick). Only leaf bricks are stored.

**Cell count.** Leaf cells = ``B^3 (k^3 + 7 (R_0 + ... + R_{L-2}))``. For each k with ``k^3 B^3 <= N`` the
fraction ``f`` of bricks refined per level that meets ``N`` is solved for (``R_l = round(f * bricks of
level l)``, at least 1, the last level's ``R`` set to meet ``N`` exactly); the k whose ``f`` is closest to
:data:`PREFERRED_FRACTION` among those within 1 % of ``N`` wins. The count written is within 10 % of ``N``
(in practice well under 1 % once ``N`` is more than about a thousand bricks); a request that cannot be met
that closely (fewer cells than ``B^3 (1 + 7 (L - 1))``, or one level and no nearby count) is a
``UsageError``. One level is ``kx x ky x kz`` bricks with each size ``k`` or ``k + 1`` (cells then are not
cubes where they differ).

**Single-cell bricks** (``single_cell_bricks``: the ragged level boundaries of seed 003's figure 8). After
the octree, each cell of an unrefined level-l brick that lies on a face shared with a refined level-l
brick is refined with probability :data:`RAGGED_PROBABILITY` (``numpy.random.default_rng(seed)``, level by
level): it becomes a 2 x 2 x 2 box of level l + 1. Such a brick's coarse cells that are left are cut into
leaf bricks by a kd split (:func:`split_boxes`: halve across the longest axis until each part is all
leaf), and so are its refined cells; about a quarter of all bricks then hold one cell and
four in five hold eight or fewer. The cell count is aimed again (up to three times) so the extra cells
still land within 10 % of ``N``.

**Order.** All leaf bricks, of every level, by the z of their lower corner in finest-level cells and in
Morton order of its x and y within a z plane, so bricks close in space are close in the file and a slab of
z planes (a rank's share of sort-last rendering) is one run of it; a frame holds them in that order,
each x fastest, then y, then z.

**Speed.** A frame is computed in pieces of about :data:`PIECE_CELLS` cells (whole bricks) on a pool of
threads, at most one piece per thread ahead of the writer (bounded memory); a piece is computed in
batches small enough for the CPU's caches. Per brick and blob the Gaussian is an outer product of three
1-D factors, and the sum over the blobs is one batched matrix product (NumPy releases the GIL there).
"""

from __future__ import annotations

import math
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from headrace import errors
from headrace.amr import AmrTopology
from headrace.convert import ProgressCallback, write_source
from headrace.convert.source import AttributeValue, BBox, FieldInfo, Piece, SourceFrame
from headrace.generate.volume import PERIOD_FRAMES, Blobs, blob_parameters
from headrace.writer import Codec

__all__ = ["generate_amr", "amr_topology", "brick_variation", "brick_values", "split_boxes", "PREFERRED_FRACTION",
           "SAMPLES", "VARIATION_TIMES", "RAGGED_PROBABILITY", "PIECE_CELLS", "MOST_LEVELS", "MOST_CELLS", "MOST_BRICKS"]

PREFERRED_FRACTION = 0.25  # of a level's bricks refined: each level then has twice the bricks of the one above
SAMPLES = 4  # points per axis at which a brick's variation is sampled
VARIATION_TIMES = tuple(range(0, PERIOD_FRAMES, 2))  # the field repeats every PERIOD_FRAMES frames
RAGGED_PROBABILITY = 0.5
PIECE_CELLS = 1 << 23  # 32 MiB of float32 values a piece
MOST_LEVELS = 8  # keeps the finest level's cell indices within Morton's 21 bits per axis
MOST_CELLS = 1 << 34
MOST_BRICKS = 1 << 23  # the topology is an attribute of 7 integers a brick, held in memory
_CLOSE = 0.01  # a plan this close to the requested count may trade precision for PREFERRED_FRACTION
_TOLERANCE = 0.10  # the most the count written may be off the requested one
_BOX: BBox = ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
_CHILDREN = np.array([[x, y, z] for z in (0, 1) for y in (0, 1) for x in (0, 1)], dtype=np.int64)
_VARIATION_BRICKS = 1 << 14  # bricks whose variation a task measures
_RAGGED_BRICKS = 1 << 12  # bricks a task cuts into leaf bricks
_BATCH_CELLS = 1 << 17  # cells computed at once: their float64 temporaries stay in the CPU's caches


@dataclass(frozen=True)
class _Plan:
    """Level-0 bricks per axis and the bricks refined on each level but the last."""

    domain_bricks: tuple[int, int, int]
    refined: tuple[int, ...]

    @property
    def leaf_bricks(self) -> int:
        return math.prod(self.domain_bricks) + 7 * sum(self.refined)


def _bricks_for_fraction(level0: int, levels: int, fraction: float) -> float:
    """Leaf bricks when a ``fraction`` of every level's bricks is refined (no rounding)."""
    return level0 * (1.0 + 7.0 * fraction * sum((8.0 * fraction) ** j for j in range(levels - 1)))


def _fraction_for(level0: int, levels: int, target: float) -> float:
    """The fraction refined per level that makes ``target`` leaf bricks (bisection; 1 when out of reach)."""
    low, high = 0.0, 1.0
    if _bricks_for_fraction(level0, levels, high) <= target:
        return high
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if _bricks_for_fraction(level0, levels, middle) < target else (low, middle)
    return (low + high) / 2


def _refined_counts(level0: int, levels: int, fraction: float, target: float) -> tuple[int, ...]:
    """``R_l = round(fraction * bricks of level l)``, at most what leaves one brick to refine on each level
    below within ``target``; the last level's ``R`` meets ``target``."""
    refined: list[int] = []
    bricks = level0
    for level in range(levels - 1):
        room = (target - level0) / 7 - sum(refined) - (levels - 2 - level)
        wanted = min(fraction * bricks, room) if level < levels - 2 else room
        refined.append(min(bricks, max(1, round(wanted))))
        bricks = 8 * refined[-1]
    return tuple(refined)


def _plan(cells: int, levels: int, brick: int) -> _Plan:
    """The level-0 bricks and refined counts whose leaf cells come closest to ``cells`` (module docstring)."""
    target = cells / brick ** 3
    if levels == 1:
        near = max(1, round(target ** (1 / 3)))
        shapes = {(k + a, k + b, k + c) for k in (near - 1, near) if k >= 1
                  for a, b, c in ((0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 1, 1))}
        best = min(sorted(shapes), key=lambda shape: abs(math.prod(shape) - target))
        return _Plan(best, ())
    candidates = []
    k = 1
    while k == 1 or k ** 3 <= target:
        fraction = _fraction_for(k ** 3, levels, target)
        plan = _Plan((k, k, k), _refined_counts(k ** 3, levels, fraction, target))
        error = abs(plan.leaf_bricks - target) / target
        candidates.append((error, abs(math.log(max(fraction, 1e-12) / PREFERRED_FRACTION)), plan))
        k += 1
    close = [c for c in candidates if c[0] <= _CLOSE]
    return min(close, key=lambda c: c[1])[2] if close else min(candidates, key=lambda c: c[0])[2]


def _lattice_values(xs: np.ndarray, ys: np.ndarray, zs: np.ndarray, blobs: Blobs, time: float) -> np.ndarray:
    """The field at the points ``(xs[b, i], ys[b, j], zs[b, k])`` of each box b: ``(boxes, nz * ny, nx)``
    float64, x fastest. Per blob a separable product; the sum over blobs is a batched matrix product."""
    centres = blobs.centres_at(time)
    scale = (-0.5 / blobs.widths ** 2)[None, :, None]

    def factors(coordinates: np.ndarray, axis: int) -> np.ndarray:  # (boxes, blobs, points)
        d = coordinates[:, None, :] - centres[None, :, axis, None]
        d *= d
        d *= scale
        return np.exp(d, out=d)

    fx, fy, fz = factors(xs, 0), factors(ys, 1), factors(zs, 2)
    fz *= blobs.amplitudes[None, :, None]
    zy = fz[:, :, :, None] * fy[:, :, None, :]  # (boxes, blobs, nz, ny)
    return np.matmul(zy.reshape(len(xs), len(blobs.amplitudes), -1).transpose(0, 2, 1), fx)


def _level_spacing(spacing: Sequence[float], levels: np.ndarray) -> np.ndarray:
    """``(bricks, 3)`` cell sizes of the bricks' levels."""
    return np.asarray(spacing, dtype=np.float64)[None, :] / (2.0 ** levels)[:, None]


def brick_variation(bricks: np.ndarray, spacing: Sequence[float], seeds: Sequence[int]) -> np.ndarray:
    """Each brick's variation (module docstring): ``bricks`` is ``(B, 7)`` (level, lower, size), ratio 2."""
    h = _level_spacing(spacing, bricks[:, 0])
    steps = np.linspace(0.0, 1.0, SAMPLES)
    xs, ys, zs = ((bricks[:, 1 + a, None] + bricks[:, 4 + a, None] * steps[None, :]) * h[:, a, None] for a in range(3))
    variation = np.zeros(len(bricks))
    for seed in seeds:
        blobs = blob_parameters(seed)
        for time in VARIATION_TIMES:
            values = _lattice_values(xs, ys, zs, blobs, float(time)).reshape(len(bricks), -1)
            np.maximum(variation, values.max(axis=1) - values.min(axis=1), out=variation)
    return variation


def _variation_in_pieces(pool: ThreadPoolExecutor, bricks: np.ndarray, spacing: Sequence[float],
                         seeds: Sequence[int]) -> np.ndarray:
    parts = [bricks[i:i + _VARIATION_BRICKS] for i in range(0, len(bricks), _VARIATION_BRICKS)]
    return np.concatenate(list(pool.map(lambda part: brick_variation(part, spacing, seeds), parts)))


def _rows(level: int, lowers: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    return np.column_stack([np.full(len(lowers), level, dtype=np.int64), lowers, sizes]).astype(np.int64)


def _octree(plan: _Plan, brick: int, spacing: Sequence[float], seeds: Sequence[int],
            pool: ThreadPoolExecutor) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per level, the lower corners of the unrefined (leaf) bricks and of the refined ones."""
    kx, ky, kz = plan.domain_bricks
    z, y, x = np.meshgrid(np.arange(kz), np.arange(ky), np.arange(kx), indexing="ij")
    lowers = np.column_stack([x.ravel(), y.ravel(), z.ravel()]).astype(np.int64) * brick
    size = np.full((1, 3), brick, dtype=np.int64)
    kept: list[np.ndarray] = []
    refined: list[np.ndarray] = []
    for level, count in enumerate(plan.refined):
        variation = _variation_in_pieces(pool, _rows(level, lowers, np.repeat(size, len(lowers), 0)), spacing, seeds)
        order = np.argsort(-variation, kind="stable")
        refined.append(lowers[order[:count]])
        kept.append(lowers[np.sort(order[count:])])
        lowers = (2 * refined[-1][:, None, :] + brick * _CHILDREN[None, :, :]).reshape(-1, 3)
    kept.append(lowers)
    return kept, refined


def split_boxes(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boxes that partition the true cells of each ``mask[b]`` (``(boxes, Z, Y, X)`` bool), by a kd split:
    a box that is neither all true nor all false is halved across its longest axis (x first on ties),
    until every part is one or the other. Returns ``b``, lower xyz, size xyz."""
    n, nz, ny, nx = mask.shape
    table = np.zeros((n, nz + 1, ny + 1, nx + 1), dtype=np.int32)  # true cells below each corner
    table[:, 1:, 1:, 1:] = mask.cumsum(axis=1, dtype=np.int32).cumsum(axis=2).cumsum(axis=3)
    b = np.arange(n)
    lower = np.zeros((n, 3), dtype=np.int64)
    size = np.tile(np.array([nx, ny, nz], dtype=np.int64), (n, 1))
    done = []
    while len(b):
        (x0, y0, z0), (x1, y1, z1) = lower.T, (lower + size).T
        count = (table[b, z1, y1, x1] - table[b, z0, y1, x1] - table[b, z1, y0, x1] - table[b, z1, y1, x0]
                 + table[b, z0, y0, x1] + table[b, z0, y1, x0] + table[b, z1, y0, x0] - table[b, z0, y0, x0])
        full = count == size.prod(axis=1)
        done.append((b[full], lower[full], size[full]))
        mixed = (count > 0) & ~full
        b, lower, size = b[mixed], lower[mixed], size[mixed]
        rows, axis = np.arange(len(b)), np.argmax(size, axis=1)
        half = size[rows, axis] // 2
        first_size, second_lower, second_size = size.copy(), lower.copy(), size.copy()
        first_size[rows, axis] = half
        second_lower[rows, axis] += half
        second_size[rows, axis] -= half
        b, lower, size = np.concatenate([b, b]), np.concatenate([lower, second_lower]), np.concatenate([first_size, second_size])
    boxes, lowers, sizes = (np.concatenate(parts) for parts in zip(*done))
    return boxes, lowers, sizes


_FACES = ((0, -1), (0, 1), (1, -1), (1, 1), (2, -1), (2, 1))  # axis, direction


def _ragged(level: int, kept: np.ndarray, refined: np.ndarray, extent: np.ndarray, brick: int,
            rng: np.random.Generator, pool: ThreadPoolExecutor) -> np.ndarray:
    """Refine the cells of ``kept`` level-l bricks on faces shared with ``refined`` ones, each with
    RAGGED_PROBABILITY. Returns the brick rows that replace ``kept`` (levels l and l + 1)."""
    def key(lattice: np.ndarray) -> np.ndarray:
        return (lattice[:, 0] * extent[1] + lattice[:, 1]) * extent[2] + lattice[:, 2]

    refined_keys = np.sort(key(refined // brick))
    touched = np.zeros((len(kept), len(_FACES)), dtype=bool)
    for face, (axis, step) in enumerate(_FACES):
        neighbour = kept // brick
        neighbour[:, axis] += step
        inside = np.logical_and.reduce((neighbour >= 0) & (neighbour < extent), axis=1)
        keys = key(np.where(inside[:, None], neighbour, 0))
        at = np.minimum(np.searchsorted(refined_keys, keys), len(refined_keys) - 1)  # a level refines one brick at least
        touched[:, face] = inside & (refined_keys[at] == keys)
    affected = np.nonzero(touched.any(axis=1))[0]
    untouched = np.setdiff1d(np.arange(len(kept)), affected)
    rows = [_rows(level, kept[untouched], np.full((len(untouched), 3), brick, dtype=np.int64))]
    refine = np.zeros((len(affected), brick, brick, brick), dtype=bool)  # (brick, z, y, x); first the face cells
    for face, (axis, step) in enumerate(_FACES):
        where: list[np.ndarray | int | slice] = [np.nonzero(touched[affected, face])[0], *[slice(None)] * 3]
        where[3 - axis] = 0 if step < 0 else brick - 1
        refine[tuple(where)] = True
    refine[refine] = rng.random(int(refine.sum())) < RAGGED_PROBABILITY

    def cut(first: int) -> np.ndarray:
        lowers, mask = kept[affected[first:first + _RAGGED_BRICKS]], refine[first:first + _RAGGED_BRICKS]
        coarse, fine = split_boxes(~mask), split_boxes(mask)
        return np.concatenate([_rows(level, lowers[coarse[0]] + coarse[1], coarse[2]),
                               _rows(level + 1, 2 * (lowers[fine[0]] + fine[1]), 2 * fine[2])])

    rows.extend(pool.map(cut, range(0, len(affected), _RAGGED_BRICKS)))
    return np.concatenate(rows)


def _spread_bits(values: np.ndarray) -> np.ndarray:
    """The 21 low bits of ``values`` moved to every other bit (a 2-D Morton interleave)."""
    v = values.astype(np.uint64) & np.uint64(0x1FFFFF)
    for shift, mask in ((16, 0x0000FFFF0000FFFF), (8, 0x00FF00FF00FF00FF), (4, 0x0F0F0F0F0F0F0F0F),
                        (2, 0x3333333333333333), (1, 0x5555555555555555)):
        v = (v | (v << np.uint64(shift))) & np.uint64(mask)
    return v


def _file_order(bricks: np.ndarray, levels: int) -> np.ndarray:
    """Bricks along z by their lower corner, and in Morton order of (x, y) within a plane (both in
    finest-level cells): a slab of z planes, what a rank of sort-last rendering draws, is one run of the file."""
    finest = bricks[:, 1:4] << (levels - 1 - bricks[:, 0])[:, None]
    plane = _spread_bits(finest[:, 0]) | (_spread_bits(finest[:, 1]) << np.uint64(1))
    return np.lexsort((plane, finest[:, 2]))


def _build(plan: _Plan, levels: int, brick: int, seed: int, seeds: Sequence[int], single_cell_bricks: bool,
           pool: ThreadPoolExecutor) -> AmrTopology:
    domain = tuple(brick * k for k in plan.domain_bricks)
    spacing = tuple(1.0 / n for n in domain)
    kept, refined = _octree(plan, brick, spacing, seeds, pool)
    size = np.full((1, 3), brick, dtype=np.int64)
    rows = []
    rng = np.random.default_rng(seed)
    for level, lowers in enumerate(kept):
        if single_cell_bricks and level < levels - 1:
            extent = np.asarray(plan.domain_bricks, dtype=np.int64) << level
            rows.append(_ragged(level, lowers, refined[level], extent, brick, rng, pool))
        else:
            rows.append(_rows(level, lowers, np.repeat(size, len(lowers), 0)))
    bricks = np.concatenate(rows)
    return AmrTopology((domain[0], domain[1], domain[2]), (2,) * (levels - 1), (0.0, 0.0, 0.0),
                       (spacing[0], spacing[1], spacing[2]), bricks[_file_order(bricks, levels)])


def _workers(workers: int | None) -> int:
    return workers or len(os.sched_getaffinity(0))


def amr_topology(cells: int, levels: int, *, seed: int = 0, field_count: int = 1, brick: int = 8,
                 single_cell_bricks: bool = False, workers: int | None = None) -> AmrTopology:
    """The fixed topology of ``generate_amr`` (module docstring): about ``cells`` leaf cells on ``levels``
    levels, refined where the fields of seeds ``seed .. seed + field_count - 1`` vary most."""
    if not 1 <= levels <= MOST_LEVELS:
        raise errors.UsageError(f"--levels must be from 1 to {MOST_LEVELS}, got {levels}")
    if not 1 <= cells <= MOST_CELLS:
        raise errors.UsageError(f"--cells must be from 1 to {MOST_CELLS:,}, got {cells:,}")
    if not 2 <= brick <= 64:
        raise errors.UsageError(f"--brick must be from 2 to 64 cells, got {brick}")
    if cells // brick ** 3 > MOST_BRICKS:
        raise errors.UsageError(f"--cells {cells:,} in bricks of {brick}^3 cells make more than {MOST_BRICKS:,} bricks: "
                         "a larger --brick")
    if field_count < 1:
        raise errors.UsageError(f"at least one field, got {field_count}")
    seeds = [seed + k for k in range(field_count)]
    with ThreadPoolExecutor(_workers(workers)) as pool:
        def build(aim: int) -> AmrTopology:
            return _build(_plan(aim, levels, brick), levels, brick, seed, seeds, single_cell_bricks, pool)

        aim = cells
        topology = best = build(aim)
        for _ in range(3 if single_cell_bricks else 0):  # ragged cells come on top of the plan: aim again
            if abs(best.cell_count - cells) <= _CLOSE * cells:
                break
            aim = max(1, round(aim * cells / topology.cell_count))
            topology = build(aim)
            best = min(best, topology, key=lambda t: abs(t.cell_count - cells))
    if abs(best.cell_count - cells) > _TOLERANCE * cells:
        least = brick ** 3 * (1 + 7 * (levels - 1))
        if cells < least:
            raise errors.UsageError(f"--cells {cells:,}: {levels} levels of bricks of {brick}^3 cells take at least {least:,} "
                             "cells (fewer --levels or a smaller --brick)")
        raise errors.UsageError(f"--cells {cells:,} with --levels {levels} and --brick {brick}: the nearest count this "
                         f"generator makes is {best.cell_count:,} cells, more than 10 % off (another --cells or --brick)")
    if len(best.bricks) > MOST_BRICKS:
        raise errors.UsageError(f"the topology has {len(best.bricks):,} bricks, more than {MOST_BRICKS:,}: fewer --cells "
                         "or a larger --brick")
    best.validate("generate amr")
    best.check_overlaps("generate amr")
    return best


def _ranges(bricks: np.ndarray, cells: int) -> list[tuple[int, int]]:
    """Consecutive brick ranges of about ``cells`` cells each (at least one brick)."""
    offsets = np.concatenate([[0], np.cumsum(np.prod(bricks[:, 4:7], axis=1))])
    bounds = [0]
    while bounds[-1] < len(bricks):
        end = int(np.searchsorted(offsets, offsets[bounds[-1]] + cells, side="right")) - 1
        bounds.append(max(end, bounds[-1] + 1))
    return list(zip(bounds[:-1], bounds[1:]))


def brick_values(bricks: np.ndarray, spacing: Sequence[float], blobs: Blobs, time: float) -> np.ndarray:
    """The float32 values of ``bricks`` (``(B, 7)`` rows, ratio 2) in brick order, each x fastest;
    computed :data:`_BATCH_CELLS` at a time, bricks of one size together."""
    sizes = bricks[:, 4:7]
    starts = np.concatenate([[0], np.cumsum(np.prod(sizes, axis=1))])
    out = np.empty(int(starts[-1]), dtype=np.float32)
    h = _level_spacing(spacing, bricks[:, 0])
    for first, end in _ranges(bricks, _BATCH_CELLS):
        shapes, group = np.unique(sizes[first:end], axis=0, return_inverse=True)
        for index, (nx, ny, nz) in enumerate(shapes.tolist()):
            members = first + np.nonzero(group.reshape(-1) == index)[0]
            xs, ys, zs = ((bricks[members, 1 + a, None] + np.arange(n)[None, :] + 0.5) * h[members, a, None]
                          for a, n in enumerate((nx, ny, nz)))
            values = _lattice_values(xs, ys, zs, blobs, time).reshape(-1)
            if len(shapes) == 1:
                out[starts[first]:starts[end]] = values
            else:
                out[(starts[members, None] + np.arange(nx * ny * nz)[None, :]).reshape(-1)] = values
    return out


class _AmrSource:
    def __init__(self, topology: AmrTopology, fields: Sequence[str], frames: int, seed: int, brick: int,
                 cells: int, single_cell_bricks: bool, pool: ThreadPoolExecutor, workers: int) -> None:
        self.path = Path("<generate amr>")
        self.topology, self.frame_count, self.pool, self.workers = topology, frames, pool, workers
        self.field_blobs = [(name, blob_parameters(seed + k)) for k, name in enumerate(fields)]
        self.fields = [FieldInfo(name, np.dtype("float32"), 1) for name in fields]
        self.attributes: dict[str, AttributeValue] = {
            "source_format": "generated",
            "generator": "amr",
            "seed": seed,
            "field_seeds": [seed + k for k in range(len(fields))],
            "requested_cells": cells,
            "brick_size": brick,
            "single_cell_bricks": int(single_cell_bricks),
            **topology.attributes(),
        }
        self.total_bytes = topology.cell_count * 4 * len(fields) * frames
        self.ranges = _ranges(topology.bricks, PIECE_CELLS)

    def frames(self) -> Iterator[SourceFrame]:
        for index in range(self.frame_count):
            yield SourceFrame(time=float(index), bbox=_BOX, pieces=self._pieces(float(index)))

    def _pieces(self, time: float) -> Iterator[Piece]:
        """Every field's pieces in order, computed a few ahead on the pool (bounded memory)."""
        bricks, spacing = self.topology.bricks, self.topology.spacing
        tasks: list[tuple[str, Callable[[], np.ndarray]]] = [
            (name, partial(brick_values, bricks[a:b], spacing, blobs, time))
            for name, blobs in self.field_blobs for a, b in self.ranges]
        pending: deque[tuple[str, Future[np.ndarray]]] = deque()
        for name, task in tasks:
            pending.append((name, self.pool.submit(task)))
            if len(pending) > self.workers:
                yield self._piece(*pending.popleft())
        while pending:
            yield self._piece(*pending.popleft())

    @staticmethod
    def _piece(name: str, future: Future[np.ndarray]) -> Piece:
        values = future.result().reshape(-1, 1)
        return Piece(name, values, values.nbytes)


def generate_amr(
    path: os.PathLike | str,
    *,
    cells: int,
    levels: int,
    frames: int,
    seed: int = 0,
    fields: Sequence[str] = ("scalar",),
    brick: int = 8,
    single_cell_bricks: bool = False,
    workers: int | None = None,
    chunk_size_bytes: int | None = None,
    codec: Codec = "none",
    codec_level: int | None = None,
    progress: ProgressCallback | None = None,
) -> Path:
    """Write ``frames`` frames of the moving blobs on an AMR topology of about ``cells`` leaf cells in
    ``levels`` levels (module docstring); return the path. ``workers`` threads compute (default: the CPUs)."""
    if frames < 1:
        raise errors.UsageError(f"--frames must be at least 1, got {frames}")
    names = list(fields)
    if not names or len(set(names)) != len(names):
        raise errors.UsageError(f"--fields needs distinct names, at least one, got {','.join(names)!r}")
    topology = amr_topology(cells, levels, seed=seed, field_count=len(names), brick=brick,
                            single_cell_bricks=single_cell_bricks, workers=workers)
    with ThreadPoolExecutor(_workers(workers)) as pool:
        source = _AmrSource(topology, names, frames, seed, brick, cells, single_cell_bricks, pool, _workers(workers))
        return write_source(source, path, chunk_size_bytes=chunk_size_bytes,  # type: ignore[arg-type]
                            codec=codec, codec_level=codec_level, progress=progress)
