"""AMReX plotfile headers: ``Header``, each level's ``Cell_H`` and each FAB's header line, parsed into a
:class:`Plotfile` and checked against each other (box counts, physical bounds, cell sizes, FAB boxes and
file sizes). The boxes' geometry is checked by :mod:`headrace.convert.amrex_boxes`; the layout of a
plotfile directory is described in :mod:`headrace.convert.amrex`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from headrace import errors
from headrace.amr import MOST_LEVELS, Box
from headrace.convert.source import bad_data, open_error

__all__ = ["Fab", "Level", "Plotfile", "parse_plotfile", "shift", "show_box"]

# A FAB's header line is far shorter than this.
_FAB_HEADER_BYTES = 1024
# How far (in cells) the Header's physical box bounds and cell sizes may stray from the indices' before
# they disagree: far above rounding, far below a cell.
_CELL_TOLERANCE = 1.0e-3
_RELATIVE_TOLERANCE = 1.0e-6

_INTS = r"\(\s*(-?\d+)\s*,\s*(-?\d+)\s*,\s*(-?\d+)\s*\)"
_BOX = re.compile(rf"\(\s*{_INTS}\s*{_INTS}\s*{_INTS}\s*\)")
_BOX_ARRAY_HEAD = re.compile(r"\(\s*(\d+)\s+\d+")
_MATRIX_HEAD = re.compile(r"(\d+)\s*,\s*(\d+)")
_FAB_HEADER = re.compile(
    r"FAB\s*\(\s*\(\s*(\d+)\s*,\s*\(([\d\s]*)\)\s*\)\s*,\s*\(\s*(\d+)\s*,\s*\(([\d\s]*)\)\s*\)\s*\)"
    rf"\s*\(\s*{_INTS}\s*{_INTS}\s*{_INTS}\s*\)\s*(\d+)"
)
# RealDescriptor format arrays (AMReX_FPC.cpp): IEEE double and single.
_REAL_FORMATS: dict[tuple[int, ...], str] = {(64, 11, 52, 0, 1, 12, 0, 1023): "f8", (32, 8, 23, 0, 1, 9, 0, 127): "f4"}


def show_box(box: Box) -> str:
    """A box as AMReX writes it: ``((lo) (hi) (0,0,0))`` with the upper corner inclusive."""
    lo, hi = box
    return f"(({lo[0]},{lo[1]},{lo[2]}) ({hi[0] - 1},{hi[1] - 1},{hi[2] - 1}) (0,0,0))"




@dataclass(frozen=True)
class Fab:
    """One box of a level: its valid cells (the file's own indices), where its values are, and the range of
    each component that ``Cell_H`` states."""

    box: Box
    grown: Box  # the box with its ghost cells, as stored
    file: Path
    data_offset: int  # the first value's byte, past the FAB's header line
    dtype: np.dtype
    minimum: np.ndarray  # float64 per component
    maximum: np.ndarray

    @property
    def grown_shape(self) -> tuple[int, int, int]:
        """``(z, y, x)`` cells stored per component."""
        lo, hi = self.grown
        return hi[2] - lo[2], hi[1] - lo[1], hi[0] - lo[0]

    @property
    def component_bytes(self) -> int:
        return math.prod(self.grown_shape) * self.dtype.itemsize

    @property
    def valid_cells(self) -> tuple[slice, slice, slice]:
        """The valid cells within the stored ones, ``(z, y, x)``."""
        (lo, hi), (glo, _) = self.box, self.grown
        return tuple(slice(lo[a] - glo[a], hi[a] - glo[a]) for a in (2, 1, 0))  # type: ignore[return-value]


@dataclass(frozen=True)
class Level:
    """One level: its ``Cell_H``, domain box, cell size and boxes."""

    cell_h: Path
    domain: Box
    cell_size: tuple[float, float, float]
    fabs: list[Fab]

    def shifted_boxes(self) -> list[Box]:
        """The boxes with the domain's lower corner moved to cell 0."""
        d = self.domain[0]
        return [(shift(fab.box[0], d), shift(fab.box[1], d)) for fab in self.fabs]


@dataclass(frozen=True)
class Plotfile:
    """A parsed and checked plotfile directory."""

    path: Path
    version: str
    variables: tuple[str, ...]
    time: float
    prob_lo: tuple[float, float, float]
    prob_hi: tuple[float, float, float]
    refinement: tuple[int, ...]
    levels: list[Level]

    @property
    def header(self) -> Path:
        return self.path / "Header"

    @property
    def data_bytes(self) -> int:
        return sum(fab.component_bytes * len(self.variables) for level in self.levels for fab in level.fabs)


def shift(corner: Sequence[int], by: Sequence[int]) -> tuple[int, int, int]:
    x, y, z = (int(c) - int(b) for c, b in zip(corner, by))
    return x, y, z


def _box_of(groups: Sequence[str]) -> tuple[Box, tuple[int, int, int]]:
    """A box and its index type from the nine integers of ``((lo) (hi) (type))``."""
    v = [int(g) for g in groups]
    return ((v[0], v[1], v[2]), (v[3] + 1, v[4] + 1, v[5] + 1)), (v[6], v[7], v[8])


class _TextLines:
    """A text file's lines, read in order; errors name the byte offset of the line last read."""

    def __init__(self, path: Path) -> None:
        try:
            raw = path.read_bytes()
        except OSError as error:
            raise open_error(path, error) from error
        self.path = path
        self._size = len(raw)
        self._lines: list[tuple[int, str]] = []
        offset = 0
        pieces = raw.split(b"\n")
        if not pieces[-1]:
            pieces.pop()  # past the last line end: the end of the file, not an empty line
        for line in pieces:
            self._lines.append((offset, line.decode("latin-1").strip()))
            offset += len(line) + 1
        self._next = 0
        self.offset = 0

    def line(self, what: str, *, skip_blank: bool = False) -> str:
        while self._next < len(self._lines):
            self.offset, text = self._lines[self._next]
            self._next += 1
            if text or not skip_blank:
                return text
        self.offset = self._size
        raise self.error(what, "the end of the file")

    def error(self, expected: str, found: str, kind: type[Exception] = errors.CorruptIndexError) -> Exception:
        return bad_data(kind, self.path, self.offset, expected, found)

    def numbers(self, kind: type, count: int, what: str) -> list:
        text = self.line(what)
        try:
            values = [kind(part) for part in text.split()]
        except ValueError:
            values = []
        if len(values) != count or (count == 0 and text):
            raise self.error(what, repr(text[:80]) if text else "an empty line")
        return values

    def number(self, kind: type, what: str) -> int | float:
        return self.numbers(kind, 1, what)[0]


@dataclass(frozen=True)
class _HeaderLevel:
    """What ``Header`` says of one level: its box count, each box's physical bounds, its FabArray prefix."""

    box_count: int
    bounds: np.ndarray  # (boxes, 3, 2): lower and upper bound per axis
    bounds_offsets: list[int]  # the byte offset of each box's first bound line
    prefix: str


def _read_header(lines: _TextLines) -> tuple[Plotfile, list[Box], list[tuple[float, float, float]], list[_HeaderLevel]]:
    """Parse ``Header``: the plotfile without its levels, each level's domain box and cell size, and what
    it says of each level's boxes (checked against ``Cell_H`` later)."""
    version = lines.line("a version string such as HyperCLaw-V1.1")
    if not version:
        raise lines.error("a version string such as HyperCLaw-V1.1", "an empty line")
    count = int(lines.number(int, "the number of variables"))
    if count < 1:
        raise lines.error("at least one variable", str(count))
    variables = []
    for _ in range(count):
        name = lines.line("a variable name")
        if not name or name in variables:
            raise lines.error("a variable name of its own", repr(name) if name else "an empty line")
        variables.append(name)
    dimensions = int(lines.number(int, "the dimensionality"))
    if dimensions != 3:
        raise lines.error("a 3-D plotfile (headrace converts 3-D AMR data only)", f"a {dimensions}-D one",
                          errors.BadDataError)
    time = float(lines.number(float, "the time"))
    finest = int(lines.number(int, "the finest level"))
    if not 0 <= finest < MOST_LEVELS:
        raise lines.error(f"a finest level from 0 to {MOST_LEVELS - 1}", str(finest))
    prob_lo = lines.numbers(float, 3, "prob_lo as three numbers")
    prob_hi = lines.numbers(float, 3, "prob_hi as three numbers")
    if not all(math.isfinite(v) for v in prob_lo + prob_hi) or any(h <= l for l, h in zip(prob_lo, prob_hi)):
        raise lines.error("prob_hi above prob_lo, both finite", f"{prob_lo} and {prob_hi}")
    refinement = lines.numbers(int, finest, f"{finest} refinement ratio(s), one per level past 0")
    if any(r < 2 for r in refinement):
        raise lines.error("refinement ratios of at least 2", str(refinement))
    text = lines.line("each level's domain box")
    domains = [_box_of(match.groups()) for match in _BOX.finditer(text)]
    if len(domains) != finest + 1 or _BOX.sub("", text).strip():
        raise lines.error(f"{finest + 1} domain box(es) ((lo) (hi) (type))", repr(text[:80]))
    domain_offset = lines.offset
    lines.numbers(int, finest + 1, f"{finest + 1} level step(s)")
    cell_sizes, cell_size_offsets = [], []
    for level in range(finest + 1):
        size = lines.numbers(float, 3, f"level {level}'s cell size as three numbers")
        cell_size_offsets.append(lines.offset)
        if not all(h > 0 and math.isfinite(h) for h in size):
            raise lines.error("positive, finite cell sizes", str(size))
        cell_sizes.append((size[0], size[1], size[2]))
    coordinates = int(lines.number(int, "the coordinate system"))
    if coordinates != 0:
        names = {1: "cylindrical", 2: "spherical"}
        raise lines.error("Cartesian coordinates (0)", f"{coordinates} ({names.get(coordinates, 'unknown')})",
                          errors.BadDataError)
    lines.number(int, "the boundary width")
    header_levels = []
    for level in range(finest + 1):
        what = f"'{level} <boxes> <time>' starting level {level}"
        parts = lines.line(what).split()
        try:
            number, box_count = int(parts[0]), int(parts[1])
            float(parts[2])
        except (IndexError, ValueError):
            number, box_count = -1, 0
        if len(parts) != 3 or number != level or box_count < 1:
            raise lines.error(what + " (at least one box)", repr(" ".join(parts)[:80]))
        lines.number(int, f"level {level}'s step")
        bounds = np.empty((box_count, 3, 2))
        offsets = []
        for box in range(box_count):
            for axis in range(3):
                bounds[box, axis] = lines.numbers(float, 2, f"box {box} of level {level}: lower and upper bound of axis {'xyz'[axis]}")
                if axis == 0:
                    offsets.append(lines.offset)
        prefix = lines.line(f"level {level}'s FabArray prefix such as Level_{level}/Cell")
        if not prefix:
            raise lines.error(f"level {level}'s FabArray prefix such as Level_{level}/Cell", "an empty line")
        header_levels.append(_HeaderLevel(box_count, bounds, offsets, prefix))
    boxes = [box for box, _ in domains]
    for level in range(1, finest + 1):
        r = refinement[level - 1]
        (lo, hi), (flo, fhi) = boxes[level - 1], boxes[level]
        if tuple(v * r for v in lo) != flo or tuple(v * r for v in hi) != fhi:
            lines.offset = domain_offset
            raise lines.error(f"level {level}'s domain box to be level {level - 1}'s refined by {r}",
                              f"{show_box(boxes[level - 1])} and {show_box(boxes[level])}")
    plotfile = Plotfile(lines.path.parent, version, tuple(variables), time, (prob_lo[0], prob_lo[1], prob_lo[2]),
                        (prob_hi[0], prob_hi[1], prob_hi[2]), tuple(refinement), [])
    _check_cell_sizes(lines.path, plotfile, boxes, cell_sizes, cell_size_offsets)
    return plotfile, boxes, cell_sizes, header_levels


def _check_cell_sizes(header: Path, plotfile: Plotfile, domains: list[Box],
                      cell_sizes: list[tuple[float, float, float]], offsets: list[int]) -> None:
    """Level 0's cell size must span prob_lo..prob_hi in the domain's cells, level l's be it over the ratios."""
    lo, hi = domains[0]
    expected = np.array([(b - a) / (h - l) for a, b, l, h in zip(plotfile.prob_lo, plotfile.prob_hi, lo, hi)])
    for level, size in enumerate(cell_sizes):
        want = expected / math.prod(plotfile.refinement[:level])
        if not np.allclose(size, want, rtol=_RELATIVE_TOLERANCE, atol=0):
            raise bad_data(errors.CorruptIndexError, header, offsets[level],
                           f"level {level}'s cell size {want.tolist()} ((prob_hi - prob_lo) / domain cells)", str(list(size)))


@dataclass(frozen=True)
class _CellHeader:
    """What one ``Cell_H`` holds: boxes, where their FABs are, each box's range per component, ghost width."""

    boxes: list[Box]
    boxes_offset: int  # of the box array's head line
    ghosts: tuple[int, int, int]
    places: list[tuple[str, int]]
    minimum: np.ndarray  # (boxes, components)
    maximum: np.ndarray


def _read_cell_h(path: Path, components: int) -> _CellHeader:
    lines = _TextLines(path)
    version = int(lines.number(int, "a VisMF header version"))
    if version != 1:
        raise lines.error("VisMF header version 1 (a header line per FAB, each box's min and max)", str(version),
                          errors.UnsupportedVersionError)
    how = int(lines.number(int, "how the FABs were written (0 or 1)"))
    if how not in (0, 1):
        raise lines.error("how the FABs were written (0 or 1)", str(how))
    count = int(lines.number(int, "the number of components"))
    if count != components:
        raise lines.error(f"{components} components, one per variable of the Header", str(count))
    text = lines.line("the ghost width")
    match = re.fullmatch(_INTS, text)
    try:
        ghosts = tuple(int(v) for v in match.groups()) if match else (int(text),) * 3
    except ValueError:
        ghosts = (-1,)
    if len(ghosts) != 3 or min(ghosts) < 0:
        raise lines.error("the ghost width (a number or (x,y,z))", repr(text[:80]))
    text = lines.line("the box array's head '(<boxes> 0'")
    head = _BOX_ARRAY_HEAD.fullmatch(text)
    if head is None:
        raise lines.error("the box array's head '(<boxes> 0'", repr(text[:80]))
    boxes_offset = lines.offset
    boxes = []
    for _ in range(int(head.group(1))):
        text = lines.line("a box ((lo) (hi) (type))")
        match = _BOX.fullmatch(text)
        if match is None:
            raise lines.error("a box ((lo) (hi) (type))", repr(text[:80]))
        box, index_type = _box_of(match.groups())
        if index_type != (0, 0, 0) or any(h <= l for l, h in zip(*box)):
            raise lines.error("a cell-centred box of at least one cell, type (0,0,0)", repr(text))
        boxes.append(box)
    text = lines.line("')' closing the box array")
    if text != ")":
        raise lines.error(f"')' closing the box array after {len(boxes)} boxes", repr(text[:80]))
    places_count = int(lines.number(int, "the number of FabOnDisk lines"))
    if places_count != len(boxes):
        raise lines.error(f"{len(boxes)} FabOnDisk lines, one per box", str(places_count))
    places = []
    for _ in boxes:
        parts = lines.line("'FabOnDisk: <file> <offset>'").split()
        if len(parts) != 3 or parts[0] != "FabOnDisk:" or not parts[2].isdigit():
            raise lines.error("'FabOnDisk: <file> <offset>'", repr(" ".join(parts)[:80]))
        places.append((parts[1], int(parts[2])))
    extremes = []
    for which in ("minimum", "maximum"):
        text = lines.line(f"'<boxes>,<components>' heading each box's {which}", skip_blank=True)
        shape = _MATRIX_HEAD.fullmatch(text)
        if shape is None or (int(shape.group(1)), int(shape.group(2))) != (len(boxes), components):
            raise lines.error(f"'{len(boxes)},{components}' heading each box's {which}", repr(text[:80]))
        rows = []
        for box in boxes:
            text = lines.line(f"box {show_box(box)}'s {which} of {components} components, each followed by ','")
            parts = text.split(",")
            try:
                row = [float(v) for v in parts[:-1]]
            except ValueError:
                row = []
            if len(row) != components or parts[-1].strip():
                raise lines.error(f"box {show_box(box)}'s {which} of {components} components, each followed by ','",
                                  repr(text[:80]))
            rows.append(row)
        extremes.append(np.array(rows, dtype=np.float64).reshape(len(boxes), components))
    return _CellHeader(boxes, boxes_offset, (ghosts[0], ghosts[1], ghosts[2]), places, extremes[0], extremes[1])


def _real_dtype(groups: Sequence[str]) -> np.dtype | None:
    """The element type a FAB's RealDescriptor names: IEEE float64 or float32, big or little endian."""
    format_count, format_text, order_count, order_text = groups
    real_format = tuple(int(v) for v in format_text.split())
    order = tuple(int(v) for v in order_text.split())
    kind = _REAL_FORMATS.get(real_format)
    if kind is None or int(format_count) != len(real_format) or int(order_count) != len(order):
        return None
    size = int(kind[1])
    if order == tuple(range(1, size + 1)):
        return np.dtype(">" + kind)
    if order == tuple(range(size, 0, -1)):
        return np.dtype("<" + kind)
    return None


def _read_fabs(cell_h: Path, header: _CellHeader, components: int) -> list[Fab]:
    """Each box's FAB: its header line read and checked against ``Cell_H``, its file long enough."""
    fabs = []
    handles: dict[str, tuple[BinaryIO, int]] = {}
    with ExitStack() as stack:
        for box, (name, offset), minimum, maximum in zip(header.boxes, header.places, header.minimum, header.maximum):
            file = cell_h.parent / name
            if name not in handles:
                try:
                    opened = stack.enter_context(open(file, "rb"))
                except OSError as error:
                    raise errors.FileOpenError(f"{file}: cannot open for reading: {error.strerror or error} (the FAB of "
                                               f"box {show_box(box)} in {cell_h})") from error
                handles[name] = (opened, os.fstat(opened.fileno()).st_size)
            handle, size = handles[name]
            handle.seek(offset)
            head = handle.read(_FAB_HEADER_BYTES)
            end = head.find(b"\n")
            if end < 0:
                kind = errors.TruncatedFileError if offset + len(head) >= size else errors.CorruptIndexError
                raise bad_data(kind, file, offset, f"a FAB header line for box {show_box(box)} (from {cell_h})",
                               f"{len(head)} bytes without a line end")
            text = head[:end].decode("latin-1").strip()
            match = _FAB_HEADER.fullmatch(text)
            if match is None:
                raise bad_data(errors.CorruptIndexError, file, offset,
                               f"a FAB header line 'FAB ((...),(...))((lo) (hi) (type)) ncomp' for box {show_box(box)}",
                               repr(text[:100]))
            dtype = _real_dtype(match.groups()[:4])
            if dtype is None:
                raise bad_data(errors.UnsupportedVersionError, file, offset,
                               "IEEE float64 or float32 values, big or little endian", repr(text[4:text.find(")))") + 3]))
            grown, _ = _box_of(match.groups()[4:13])
            expected = (shift(box[0], header.ghosts), shift(box[1], [-g for g in header.ghosts]))
            if grown != expected or int(match.group(14)) != components:
                raise bad_data(errors.CorruptIndexError, file, offset,
                               f"box {show_box(expected)} and {components} components ({cell_h}'s box {show_box(box)} "
                               f"with {list(header.ghosts)} ghost cells)", f"{show_box(grown)} and {match.group(14)}")
            fab = Fab(box, grown, file, offset + end + 1, dtype, minimum, maximum)
            if size < fab.data_offset + components * fab.component_bytes:
                raise bad_data(errors.TruncatedFileError, file, fab.data_offset,
                               f"{components * fab.component_bytes} bytes of values for box {show_box(box)} "
                               f"({components} components of {show_box(grown)}, {dtype.itemsize} bytes each)",
                               f"{max(size - fab.data_offset, 0)} bytes")
            fabs.append(fab)
    return fabs




def _check_bounds(plotfile: Plotfile, level: int, domain: Box, cell_size: tuple[float, float, float],
                  header_level: _HeaderLevel, cell_header: _CellHeader, cell_h: Path) -> None:
    """``Header``'s box count and physical box bounds must match ``Cell_H``'s boxes: bounds measured from
    the domain's lower corner (``WriteMultiLevelPlotfile``) or from cell 0 (``AmrLevel`` codes), the same
    when the domain starts at cell 0."""
    if header_level.box_count != len(cell_header.boxes):
        raise bad_data(errors.CorruptIndexError, cell_h, cell_header.boxes_offset,
                       f"{header_level.box_count} boxes, as {plotfile.header} says",
                       str(len(cell_header.boxes)))
    lo = np.array([box[0] for box in cell_header.boxes], dtype=np.float64)
    hi = np.array([box[1] for box in cell_header.boxes], dtype=np.float64)
    h = np.asarray(cell_size)
    origin = np.asarray(plotfile.prob_lo)
    corner = np.asarray(domain[0])
    expected, unshifted = (np.stack([origin + (lo - c) * h, origin + (hi - c) * h], axis=2) for c in (corner, 0 * corner))
    wrong = np.abs(header_level.bounds - expected) > _CELL_TOLERANCE * h[None, :, None]
    if wrong.any() and (np.abs(header_level.bounds - unshifted) > _CELL_TOLERANCE * h[None, :, None]).any():
        box = int(np.argmax(wrong.any(axis=(1, 2))))
        raise bad_data(errors.CorruptIndexError, plotfile.header, header_level.bounds_offsets[box],
                       f"box {box} of level {level} to span {expected[box].tolist()} (box {show_box(cell_header.boxes[box])} "
                       f"of {cell_h})", str(header_level.bounds[box].tolist()))


def parse_plotfile(path: Path) -> Plotfile:
    """Parse one plotfile directory and check its files against each other; the boxes' geometry is
    :func:`headrace.convert.amrex_boxes.check_boxes`'s."""
    plotfile, domains, cell_sizes, header_levels = _read_header(_TextLines(path / "Header"))
    for number, header_level in enumerate(header_levels):
        cell_h = path / (header_level.prefix + "_H")
        cell_header = _read_cell_h(cell_h, len(plotfile.variables))
        _check_bounds(plotfile, number, domains[number], cell_sizes[number], header_level, cell_header, cell_h)
        fabs = _read_fabs(cell_h, cell_header, len(plotfile.variables))
        plotfile.levels.append(Level(cell_h, domains[number], cell_sizes[number], fabs))
    return plotfile

