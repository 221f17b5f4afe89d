"""The geometry of an AMReX plotfile's boxes: inside the domain, no overlap within a level, properly
nested between levels, and the same boxes in every plotfile of a series (one AMR topology)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from headrace import errors
from headrace.amr import Box
from headrace.convert.amrex_header import Plotfile, show_box

__all__ = ["check_boxes", "same_topology"]


def _box_error(kind: type[Exception], path: os.PathLike | str, box: Box, expected: str, found: str) -> Exception:
    """A bad-data error naming a box where others name an offset."""
    return kind(f"{path}: box {show_box(box)}: expected {expected}, found {found}")



def _touching(sorted_boxes: np.ndarray, widest: int, box: np.ndarray) -> np.ndarray:
    """Indices into ``sorted_boxes`` (rows lo xyz, hi xyz, sorted by lo x, none wider than ``widest``
    along x) of the boxes that share a cell with ``box``."""
    start = np.searchsorted(sorted_boxes[:, 0], box[0] - widest, side="right")
    end = np.searchsorted(sorted_boxes[:, 0], box[3], side="left")
    window = sorted_boxes[start:end]
    hit = ((window[:, :3] < box[3:]) & (window[:, 3:] > box[:3])).all(axis=1)
    return start + np.nonzero(hit)[0]


def _box_rows(boxes: Sequence[Box]) -> np.ndarray:
    return np.array([[*lo, *hi] for lo, hi in boxes], dtype=np.int64).reshape(-1, 6)


def check_boxes(plotfile: Plotfile) -> None:
    """Every box inside its level's domain; no two boxes of a level overlapping; each fine box made of
    whole cells of the coarser level and inside the coarser level's boxes (proper nesting)."""
    coarse: np.ndarray | None = None
    for number, level in enumerate(plotfile.levels):
        rows = _box_rows([fab.box for fab in level.fabs])
        (dlo, dhi) = level.domain
        outside = (rows[:, :3] < dlo).any(axis=1) | (rows[:, 3:] > dhi).any(axis=1)
        if outside.any():
            box = level.fabs[int(np.argmax(outside))].box
            raise _box_error(errors.CorruptIndexError, level.cell_h, box, f"a box inside level {number}'s domain "
                             f"{show_box(level.domain)}", "one outside it")
        order = np.argsort(rows[:, 0], kind="stable")
        sorted_rows = rows[order]
        widest = int((rows[:, 3] - rows[:, 0]).max())
        for index, row in enumerate(rows):
            others = [int(order[j]) for j in _touching(sorted_rows, widest, row) if order[j] != index]
            if others:
                raise _box_error(errors.CorruptIndexError, level.cell_h, level.fabs[index].box,
                                 f"boxes of level {number} that do not overlap",
                                 f"it overlaps box {show_box(level.fabs[min(others)].box)}")
        if coarse is not None:
            r = plotfile.refinement[number - 1]
            unaligned = (rows % r != 0).any(axis=1)
            if unaligned.any():
                box = level.fabs[int(np.argmax(unaligned))].box
                raise _box_error(errors.CorruptIndexError, level.cell_h, box,
                                 f"a box of whole level-{number - 1} cells (corners multiples of the ratio {r})", "one that is not")
            coarse_order = np.argsort(coarse[:, 0], kind="stable")
            sorted_coarse = coarse[coarse_order]
            coarse_widest = int((coarse[:, 3] - coarse[:, 0]).max())
            for index, row in enumerate(rows // r):
                cover = sorted_coarse[_touching(sorted_coarse, coarse_widest, row)]
                shared = np.minimum(cover[:, 3:], row[3:]) - np.maximum(cover[:, :3], row[:3])
                if int(np.prod(shared, axis=1).sum()) != int(np.prod(row[3:] - row[:3])):
                    raise _box_error(errors.CorruptIndexError, level.cell_h, level.fabs[index].box,
                                     f"a box inside the boxes of level {number - 1} (properly nested)",
                                     f"one reaching past them ({show_box((tuple(row[:3]), tuple(row[3:])))} in level-{number - 1} cells)")
        coarse = rows



def same_topology(first: Plotfile, other: Plotfile) -> None:
    """Refuse ``other`` unless it has ``first``'s variables, levels, domain, geometry and boxes."""
    def refuse(path: Path, expected: str, found: str) -> Exception:
        return errors.CorruptIndexError(f"{path}: expected {expected} as in {first.path} (every plotfile of a series "
                                        f"has one topology), found {found}")

    if sorted(other.variables) != sorted(first.variables):
        raise refuse(other.header, f"the variables {', '.join(first.variables)}", ", ".join(other.variables))
    for what, mine, theirs in (
        ("levels", len(first.levels), len(other.levels)),
        ("refinement ratios", list(first.refinement), list(other.refinement)),
        ("domain", show_box(first.levels[0].domain), show_box(other.levels[0].domain)),
        ("prob_lo and prob_hi", [first.prob_lo, first.prob_hi], [other.prob_lo, other.prob_hi]),
    ):
        if mine != theirs:
            raise refuse(other.header, f"{what} {mine}", str(theirs))
    for level, other_level in zip(first.levels, other.levels):
        boxes = {fab.box for fab in level.fabs}
        if len(other_level.fabs) != len(level.fabs):
            raise refuse(other_level.cell_h, f"{len(level.fabs)} boxes", str(len(other_level.fabs)))
        other_boxes = {fab.box for fab in other_level.fabs}
        stray = next((fab.box for fab in other_level.fabs if fab.box not in boxes), None)
        if stray is not None:
            raise refuse(other_level.cell_h, f"the boxes of {level.cell_h}", f"box {show_box(stray)}, which it lacks")
        missing = next((fab.box for fab in level.fabs if fab.box not in other_boxes), None)  # one listed twice
        if missing is not None:
            raise refuse(other_level.cell_h, f"the boxes of {level.cell_h}", f"no box {show_box(missing)}")
