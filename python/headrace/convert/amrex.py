"""AMReX plotfiles: one plotfile directory per frame, its cells stored as leaf bricks (``layout = "amr"``).

A plotfile, as AMReX's ``WriteMultiLevelPlotfile`` writes it (``AMReX_PlotFileUtil.cpp``, ``AMReX_VisMF.cpp``,
``AMReX_FArrayBox.cpp``; yt's ``frontends/amrex`` reads the same), is a directory of:

- ``Header`` (text): the version string (``HyperCLaw-V1.1``), the number of variables and their names one
  per line, the dimensionality, the time, the finest level, ``prob_lo`` and ``prob_hi``, the refinement
  ratio between each level and the next, each level's domain box, each level's step, each level's cell
  size, the coordinate system, the boundary width, then per level: ``level boxes time``, the level's step,
  each box's physical lower and upper bound per axis, and the level's FabArray prefix (``Level_0/Cell``).
- ``Level_N/Cell_H`` (text, VisMF header version 1): version, how the FABs were written, the number of
  components, the ghost width, the boxes ``((lo) (hi) (type))`` (corners inclusive), a line
  ``FabOnDisk: <file> <offset>`` per box, then each box's minimum and maximum of each component.
- ``Level_N/Cell_D_*``: the FABs, each a text line ``FAB ((8, (64 11 52 0 1 12 0 1023)),(8, (8 7 6 5 4 3 2
  1)))((lo) (hi) (0,0,0)) ncomp`` (the real format and byte order, the box with its ghost cells, the
  component count) and then the values, x fastest, one component after the other.

:func:`open_amrex` reads and checks every header (``Header``, each ``Cell_H``, each FAB's header line and
its file's size) and the boxes (inside the domain, no overlap within a level, each fine box of whole
coarse cells and inside the coarser level's boxes) before any output exists. The values are read one FAB
component at a time while a frame is written, ghost cells dropped, and each component's range is checked
against ``Cell_H``'s. docs/converters.md states the mapping.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from headrace import errors
from headrace.amr import AmrTopology, Box, bricks_array, leaf_bricks
from headrace.convert.amrex_boxes import check_boxes, same_topology
from headrace.convert.amrex_header import Fab, Level, Plotfile, parse_plotfile, shift, show_box
from headrace.convert.source import AttributeValue, BBox, FieldInfo, Piece, SourceFrame, bad_data, natural_key

__all__ = ["AmrexSource", "Fab", "Level", "Plotfile", "open_amrex", "read_plotfile", "show_box", "is_amrex_plotfile",
           "is_plotfile_folder"]

# Bytes of float32 values gathered into one piece (bounds the memory a frame needs besides one FAB).
PIECE_BYTES = 32 << 20
# AMReX writes per-box minima and maxima below this magnitude as 0 (VisMF::Header::CalculateMinMax).
_FLUSHED_TO_ZERO = 1.0e-300


def is_amrex_plotfile(path: Path) -> bool:
    """Whether ``path`` is an AMReX plotfile folder: it holds ``Header`` whose first line starts with
    ``HyperCLaw``, or ``Header`` and a ``Level_0`` folder."""
    if not (path / "Header").is_file():
        return False
    if (path / "Level_0").is_dir():
        return True
    try:
        with open(path / "Header", "rb") as handle:
            return handle.read(16).startswith(b"HyperCLaw")
    except OSError:
        return False


def is_plotfile_folder(path: Path) -> bool:
    """A folder holding ``Header``, taken as a plotfile (:func:`read_plotfile` says what it lacks)."""
    return path.is_dir() and (path / "Header").is_file()


def read_plotfile(path: os.PathLike | str) -> Plotfile:
    """Parse and check one plotfile directory: ``Header``, each ``Cell_H``, each FAB's header line and
    size, and the boxes. Raises ``FileOpenError`` (a missing file), ``CorruptIndexError`` (a bad line, files
    that disagree, boxes outside the domain, overlapping or not nested), ``TruncatedFileError``,
    ``UnsupportedVersionError`` (a VisMF version or real format other than those read) or ``BadDataError``
    (not 3-D, not Cartesian)."""
    plotfile = parse_plotfile(Path(path))
    check_boxes(plotfile)
    return plotfile



class _PieceBuffer:
    """One field's float32 values gathered into pieces of about :data:`PIECE_BYTES`, each carrying the
    input bytes read for it."""

    def __init__(self, field: str, capacity: int) -> None:
        self.field = field
        self.capacity = max(1, capacity)
        self.values = np.empty(self.capacity, np.float32)
        self.used = 0
        self.source_bytes = 0

    def add(self, cells: np.ndarray) -> Iterator[Piece]:
        """Append ``cells`` (a ``(z, y, x)`` view of any float type) in C order."""
        if self.used + cells.size > self.capacity:
            yield from self.flush()
        if cells.size > self.capacity:  # a brick larger than a piece: a piece of its own
            yield Piece(self.field, cells.astype(np.float32, order="C").reshape(-1, 1), self.source_bytes)
            self.source_bytes = 0
            return
        np.copyto(self.values[self.used:self.used + cells.size].reshape(cells.shape), cells, casting="same_kind")
        self.used += cells.size

    def flush(self) -> Iterator[Piece]:
        if self.used or self.source_bytes:
            yield Piece(self.field, self.values[:self.used].reshape(-1, 1), self.source_bytes)
            self.values = np.empty(self.capacity, np.float32)
            self.used = 0
            self.source_bytes = 0


def _flushed(value: float) -> float:
    return 0.0 if abs(value) < _FLUSHED_TO_ZERO else value


def _agrees(stated: float, found: float, has_nan: bool, dtype: np.dtype) -> bool:
    """Whether ``Cell_H``'s ``stated`` extreme (of the values in memory, before they were written as
    ``dtype``: rounding keeps the order, so it rounds to the stored extreme) matches the one ``found``."""
    if math.isnan(stated):
        return has_nan
    with np.errstate(over="ignore"):
        stored = float(np.asarray(stated).astype(dtype))
    return _flushed(stored) == _flushed(found)


def _read_component(fab: Fab, component: int, variable: str, cell_h: Path) -> tuple[np.ndarray, int]:
    """A FAB's valid cells of one component as a ``(z, y, x)`` view, its range checked against ``Cell_H``,
    and the bytes read."""
    start = fab.data_offset + component * fab.component_bytes
    try:
        with open(fab.file, "rb") as handle:
            handle.seek(start)
            raw = handle.read(fab.component_bytes)
    except OSError as error:
        raise errors.FileOpenError(f"{fab.file}: cannot read: {error.strerror or error} (the FAB of box "
                                   f"{show_box(fab.box)} in {cell_h})") from error
    if len(raw) != fab.component_bytes:
        raise bad_data(errors.TruncatedFileError, fab.file, start,
                       f"{fab.component_bytes} bytes of {variable} for box {show_box(fab.box)}", f"{len(raw)} bytes")
    cells = np.frombuffer(raw, fab.dtype).reshape(fab.grown_shape)[fab.valid_cells]
    low, high = float(cells.min()), float(cells.max())
    has_nan = math.isnan(low) or math.isnan(high)
    if has_nan and not np.isnan(cells).all():
        low, high = float(np.nanmin(cells)), float(np.nanmax(cells))
    stated = (float(fab.minimum[component]), float(fab.maximum[component]))
    if not (_agrees(stated[0], low, has_nan, fab.dtype) and _agrees(stated[1], high, has_nan, fab.dtype)):
        raise bad_data(errors.CorruptIndexError, fab.file, start,
                       f"{variable} of box {show_box(fab.box)} from {stated[0]!r} to {stated[1]!r}, as {cell_h} says",
                       f"{low!r} to {high!r}")
    return cells, fab.component_bytes


class AmrexSource:
    """Opened and checked plotfiles (one frame each); see :func:`open_amrex`.

    Each variable becomes a float32 field of one component; a frame holds each variable's leaf cells in
    brick order (:func:`headrace.amr.leaf_bricks` of frame 0's boxes)."""

    def __init__(self, plotfiles: list[Plotfile]) -> None:
        first = plotfiles[0]
        self.plotfiles = plotfiles
        self.path = first.path
        self.frame_count = len(plotfiles)
        self.total_bytes = sum(p.data_bytes for p in plotfiles)
        self.fields = [FieldInfo(name, np.dtype(np.float32), 1) for name in first.variables]
        levels = [level.shifted_boxes() for level in first.levels]
        leaves = leaf_bricks(levels, first.refinement)
        domain_lo, domain_hi = first.levels[0].domain
        self.topology = AmrTopology(shift(domain_hi, domain_lo), first.refinement, first.prob_lo,
                                    first.levels[0].cell_size, bricks_array(leaves))
        self.topology.validate(os.fspath(first.path))
        self.topology.check_overlaps(os.fspath(first.path))
        self._plan = _brick_plan(levels, leaves)
        # Each frame's FAB per plan entry (boxes may be listed in another order) and component per field.
        self._fabs = []
        self._components = []
        for plotfile in plotfiles:
            by_box = [{fab.box: fab for fab in level.fabs} for level in plotfile.levels]
            self._fabs.append([by_box[level][first.levels[level].fabs[index].box] for level, index, _ in self._plan])
            self._components.append([plotfile.variables.index(name) for name in first.variables])
        self.attributes: dict[str, AttributeValue] = {
            **self.topology.attributes(),
            "source_format": "amrex",
            "source_path": os.fspath(first.path),
            "amrex_version": first.version,
            "amrex_variables": "\n".join(first.variables),
            "amrex_value_range": _value_ranges(plotfiles),
        }

    def frames(self) -> Iterator[SourceFrame]:
        for plotfile, fabs, components in zip(self.plotfiles, self._fabs, self._components):
            bbox: BBox = (plotfile.prob_lo, plotfile.prob_hi)
            yield SourceFrame(time=plotfile.time, bbox=bbox, pieces=self._pieces(plotfile, fabs, components))

    def _pieces(self, plotfile: Plotfile, fabs: list[Fab], components: list[int]) -> Iterator[Piece]:
        """Each field's leaf cells in brick order: one FAB component read at a time, its bricks cut out."""
        capacity = min(PIECE_BYTES // 4, self.topology.cell_count)
        for info, component in zip(self.fields, components):
            buffer = _PieceBuffer(info.name, capacity)
            for (level, _, cuts), fab in zip(self._plan, fabs):
                cells, read = _read_component(fab, component, info.name, plotfile.levels[level].cell_h)
                buffer.source_bytes += read
                for cut in cuts:
                    yield from buffer.add(cells[cut])
            yield from buffer.flush()


def _brick_plan(levels: list[list[Box]], leaves: list[tuple[int, Box]]) -> list[tuple[int, int, list[tuple[slice, ...]]]]:
    """For each box that keeps leaf cells, in brick order: its level, its index in the level, and each of
    its bricks as ``(z, y, x)`` slices of its valid cells. ``leaf_bricks`` lists a box's bricks together,
    box after box, each inside its box."""
    plan = []
    position = 0
    for number, boxes in enumerate(levels):
        for index, (lo, hi) in enumerate(boxes):
            cuts = []
            while position < len(leaves) and leaves[position][0] == number:
                plo, phi = leaves[position][1]
                if any(plo[a] < lo[a] or phi[a] > hi[a] for a in range(3)):
                    break
                cuts.append(tuple(slice(plo[a] - lo[a], phi[a] - lo[a]) for a in (2, 1, 0)))
                position += 1
            if cuts:
                plan.append((number, index, cuts))
    return plan


def _value_ranges(plotfiles: Sequence[Plotfile]) -> list[float]:
    """Each variable's smallest and largest value over every box of every plotfile (covered coarse cells
    included), from the ``Cell_H`` files: ``[min0, max0, min1, max1, ...]`` in field order."""
    first = plotfiles[0]
    low = np.full(len(first.variables), np.inf)
    high = np.full(len(first.variables), -np.inf)
    for plotfile in plotfiles:
        order = [plotfile.variables.index(name) for name in first.variables]
        for level in plotfile.levels:
            minimum = np.array([fab.minimum for fab in level.fabs])[:, order]
            maximum = np.array([fab.maximum for fab in level.fabs])[:, order]
            low = np.fmin(low, np.fmin.reduce(minimum, axis=0))  # fmin and fmax skip NaN
            high = np.fmax(high, np.fmax.reduce(maximum, axis=0))
    return [float(v) for pair in zip(low, high) for v in pair]


def open_amrex(paths: Sequence[os.PathLike | str]) -> AmrexSource:
    """Parse and check every plotfile directory of ``paths`` (frames in natural order of their names) and
    that they share one topology. Raises what :func:`read_plotfile` raises, ``CorruptIndexError`` for a
    plotfile whose topology differs from the first's, ``UsageError`` for no plotfiles."""
    if not paths:
        raise errors.UsageError("no AMReX plotfiles given")
    ordered = sorted((Path(p) for p in paths), key=lambda path: (natural_key(path.name), natural_key(path)))
    plotfiles = [read_plotfile(ordered[0])]
    for path in ordered[1:]:  # the first's boxes, checked once, are theirs too
        plotfiles.append(parse_plotfile(path))
        same_topology(plotfiles[0], plotfiles[-1])
    return AmrexSource(plotfiles)
