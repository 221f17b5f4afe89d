"""VTK XML files through the vtk library: ``.vti`` image data, ``.vtp`` point sets and ``.pvd`` series.

- ``.vti`` (``vtkXMLImageDataReader``): each point-data array becomes a field on the grid, with
  ``grid_dims`` ``[X, Y, Z]`` (the whole extent's points), ``grid_origin`` (the position of the extent's
  first point: ``Origin + extent start * Spacing``), ``grid_spacing`` (``Spacing``) and ``layout``
  ``linear``: VTK stores point data x fastest, then y, then z, as the container does, so values are copied
  unchanged. An image with a ``Direction`` other than the identity (a rotated grid) is refused.
- ``.vtp`` (``vtkXMLPolyDataReader``): the points become field ``position`` (x3, float32 or float64 as
  stored) and each point-data array a per-particle field. Vertex and poly-vertex cells (or none) are what
  a point set has; lines, polygons or strips are refused, naming the cell kind.
- ``.pvd`` (a ParaView collection: ``<DataSet timestep=... file=...>`` entries, read with
  ``xml.etree``): its datasets, all ``.vti`` or all ``.vtp``, become frames in timestep order, each
  dataset's ``timestep`` its frame's time.

Several files (a list, a glob, a directory) are frames in order. A frame's time is the ``.pvd``
timestep, else the file's ``TimeValue`` field-data array (ParaView writes it), else the frame index.
Cell-data arrays are refused (they are not on the points); field data other than ``TimeValue`` is
left out. Arrays must be numbers (``Int8`` .. ``UInt64``, ``Float32``, ``Float64``); every frame has the
same arrays, types and components (and for images the same grid; point sets may change their number of
points).

Every file's XML header is read (``UpdateInformation``) and checked when the input is opened, before any
output exists. vtk reads a file's data whole, so a frame takes one file's data in memory, handed on to
the writer in pieces of about 32 MiB; the frame's data is checked against its header after the read.
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from headrace import errors
from headrace.convert.raw_particles import _centre_bbox
from headrace.convert.source import AttributeValue, BBox, FieldInfo, Piece, SourceFrame, open_error

__all__ = ["VtkKind", "Grid", "VtkHeader", "VtkSource", "VtkErrors", "PvdEntry", "POSITION_FIELD", "open_vtk",
           "open_pvd", "read_pvd", "read_header"]

# The field a point set's points become.
POSITION_FIELD = "position"
# Bytes of an array handed to the writer at a time (bounds the memory a frame needs beyond vtk's copy).
_SLICE_BYTES = 32 << 20
# Cell kinds a point set may not have, as the XML piece counts them.
_REFUSED_CELLS = (("NumberOfLines", "line"), ("NumberOfPolys", "polygon"), ("NumberOfStrips", "triangle strip"))
_POINT_TYPES: dict[str, np.dtype] = {"Float32": np.dtype("float32"), "Float64": np.dtype("float64")}
_IDENTITY = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)


class VtkKind(Enum):
    """The VTK XML dataset kinds read; the values are the file name extensions."""

    IMAGE = "vti"
    POINTS = "vtp"

    @property
    def data_type(self) -> str:
        """The ``type`` of the file's ``<VTKFile>`` element."""
        return "ImageData" if self is VtkKind.IMAGE else "PolyData"


@dataclass(frozen=True)
class Grid:
    """An image's points: ``dims`` (X, Y, Z), the first point's position and the spacing."""

    dims: tuple[int, int, int]
    origin: tuple[float, float, float]
    spacing: tuple[float, float, float]

    def bbox(self) -> BBox:
        last = [o + (d - 1) * h for o, d, h in zip(self.origin, self.dims, self.spacing)]
        low = tuple(min(a, b) for a, b in zip(self.origin, last))
        high = tuple(max(a, b) for a, b in zip(self.origin, last))
        return (low, high)  # type: ignore[return-value]


@dataclass(frozen=True)
class VtkHeader:
    """What one file's XML header says: its point-data arrays (as fields), its number of points, and its
    grid (images) or the type of its points (point sets)."""

    path: Path
    kind: VtkKind
    arrays: tuple[FieldInfo, ...]
    points: int
    grid: Grid | None = None
    point_dtype: np.dtype | None = None

    @property
    def fields(self) -> list[FieldInfo]:
        """The container fields: a point set's positions first, then the arrays."""
        if self.kind is VtkKind.POINTS:
            assert self.point_dtype is not None
            return [FieldInfo(POSITION_FIELD, self.point_dtype, 3), *self.arrays]
        return list(self.arrays)

    @property
    def data_bytes(self) -> int:
        return self.points * sum(info.components * info.dtype.itemsize for info in self.fields)


class VtkErrors:
    """Collects the errors that vtk objects report while the block runs, instead of vtk printing them.

    An observer on each object catches its own errors; vtk's global display is off for the block, so
    those of the objects inside (its XML parser, the pipeline) are not printed either: the object's own
    message says what failed.
    """

    def __init__(self, *objects: Any) -> None:
        self.objects = objects
        self.messages: list[str] = []
        self._tags: list[tuple[Any, int]] = []
        self._display = 1

    def __enter__(self) -> VtkErrors:
        # vtk (optional, slow to import): loaded only when VTK files are read or written
        from vtkmodules.util.misc import calldata_type
        from vtkmodules.vtkCommonCore import VTK_STRING, vtkObject

        @calldata_type(VTK_STRING)
        def collect(caller: Any, event: str, text: str) -> None:
            self.messages.append(_last_line(text))

        self._display = vtkObject.GetGlobalWarningDisplay()
        vtkObject.GlobalWarningDisplayOff()
        self._tags = [(item, item.AddObserver("ErrorEvent", collect)) for item in self.objects]
        return self

    def __exit__(self, *exc: object) -> None:
        # vtk (optional, slow to import): loaded only when VTK files are read or written
        from vtkmodules.vtkCommonCore import vtkObject

        for item, tag in self._tags:
            item.RemoveObserver(tag)
        vtkObject.SetGlobalWarningDisplay(self._display)

    def first(self) -> str | None:
        """The first error reported, or ``None``."""
        return self.messages[0] if self.messages else None


def _last_line(text: str) -> str:
    """vtk's ``ERROR: In file.cxx, line N\\nclass (0x...): message`` -> ``message``."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return re.sub(r"^\w+ \(0x[0-9a-fA-F]+\): ", "", lines[-1] if lines else text).strip()


def _mismatch(kind: type[Exception], path: os.PathLike | str, what: str, expected: str, found: str) -> Exception:
    """A bad-data error naming the file, the part of it (an array, the extent) and what was expected."""
    return kind(f"{path}: {what}: expected {expected}, found {found}")


def _describe(info: FieldInfo) -> str:
    return f"{info.dtype} x {info.components}"


def _reader(kind: VtkKind) -> Any:
    try:
        # vtk (optional, slow to import): loaded only when VTK files are read or written
        from vtkmodules.vtkIOXML import vtkXMLImageDataReader, vtkXMLPolyDataReader
    except ImportError as error:
        raise errors.UsageError(f"reading .{kind.value} files needs the vtk package (pip install vtk): {error}") from None
    return vtkXMLImageDataReader() if kind is VtkKind.IMAGE else vtkXMLPolyDataReader()


def _open_reader(path: Path, kind: VtkKind) -> Any:
    """A vtk reader on ``path`` with its XML header read (``UpdateInformation``) and checked for errors."""
    try:
        with open(path, "rb"):
            pass
    except OSError as error:
        raise open_error(path, error) from error
    reader = _reader(kind)
    if not reader.CanReadFile(os.fspath(path)):
        raise _mismatch(errors.BadMagicError, path, "start", f'a VTK XML {kind.data_type} file (<VTKFile '
                        f'type="{kind.data_type}">)', "a file vtk cannot read as one")
    reader.SetFileName(os.fspath(path))
    with VtkErrors(reader) as caught:
        reader.UpdateInformation()
    parser = reader.GetXMLParser()
    # XML cut short in its header: only the parser, whose errors vtk does not pass on, notices; it keeps no tree.
    if caught.first() is not None or parser is None or parser.GetRootElement() is None:
        found = f"vtk's error: {caught.first()}" if caught.first() else "XML that vtk's parser cannot read to its end"
        raise _mismatch(errors.CorruptIndexError, path, "header", f"a readable VTK XML {kind.data_type} header", found)
    return reader


def _array_infos(reader: Any, key: Any) -> list[tuple[str, int, int]]:
    """(name, vtk type, components) of the point- or cell-data arrays the header announces."""
    vector = reader.GetOutputInformation(0).Get(key)
    if vector is None:
        return []
    # vtk (optional, slow to import): loaded only when VTK files are read or written
    from vtkmodules.vtkCommonDataModel import vtkDataObject

    entries = []
    for index in range(vector.GetNumberOfInformationObjects()):
        entry = vector.GetInformationObject(index)
        entries.append((entry.Get(vtkDataObject.FIELD_NAME()), entry.Get(vtkDataObject.FIELD_ARRAY_TYPE()),
                        entry.Get(vtkDataObject.FIELD_NUMBER_OF_COMPONENTS())))
    return entries


def _numpy_dtype(vtk_type: int) -> np.dtype | None:
    """The NumPy dtype of a numeric vtk array type (``None`` for bits, strings, variants)."""
    # vtk (optional, slow to import): loaded only when VTK files are read or written
    from vtkmodules.util.numpy_support import get_vtk_to_numpy_typemap
    from vtkmodules.vtkCommonCore import VTK_BIT

    numeric = get_vtk_to_numpy_typemap()
    return np.dtype(numeric[vtk_type]) if vtk_type in numeric and vtk_type != VTK_BIT else None


def _type_name(vtk_type: int) -> str:
    # vtk (optional, slow to import): loaded only when VTK files are read or written
    from vtkmodules.vtkCommonCore import vtkAbstractArray

    array = vtkAbstractArray.CreateArray(vtk_type)
    return array.GetDataTypeAsString() if array is not None else f"vtk type {vtk_type}"


def _point_arrays(path: Path, reader: Any) -> tuple[FieldInfo, ...]:
    """The header's point-data arrays as fields; refuses cell data, non-numeric arrays and clashing names."""
    # vtk (optional, slow to import): loaded only when VTK files are read or written
    from vtkmodules.vtkCommonDataModel import vtkDataObject

    cells = _array_infos(reader, vtkDataObject.CELL_DATA_VECTOR())
    if cells:
        raise _mismatch(errors.BadDataError, path, f"cell array '{cells[0][0]}'",
                        "point data only (ParaView's Cell Data to Point Data filter moves it to the points)",
                        "data on the cells")
    arrays: list[FieldInfo] = []
    for name, vtk_type, components in _array_infos(reader, vtkDataObject.POINT_DATA_VECTOR()):
        dtype = _numpy_dtype(vtk_type)
        if dtype is None:
            raise _mismatch(errors.BadDataError, path, f"point array '{name}'",
                            "numbers (Int8 .. Int64, UInt8 .. UInt64, Float32, Float64)",
                            f"an array of {_type_name(vtk_type)}")
        if not name or len(name.encode()) > 255:
            raise _mismatch(errors.BadDataError, path, f"point array {name!r}", "a name of 1 to 255 bytes",
                            f"{len(name.encode())} bytes")
        if any(info.name == name for info in arrays):
            raise _mismatch(errors.BadDataError, path, f"point array '{name}'", "each array name once",
                            "it twice")
        arrays.append(FieldInfo(name, dtype, int(components)))
    return tuple(arrays)


def _grid(path: Path, reader: Any) -> Grid:
    # vtk (optional, slow to import): loaded only when VTK files are read or written
    from vtkmodules.vtkCommonDataModel import vtkDataObject
    from vtkmodules.vtkCommonExecutionModel import vtkStreamingDemandDrivenPipeline

    info = reader.GetOutputInformation(0)
    extent = info.Get(vtkStreamingDemandDrivenPipeline.WHOLE_EXTENT())
    spacing = tuple(float(h) for h in info.Get(vtkDataObject.SPACING()))
    origin = tuple(float(o) for o in info.Get(vtkDataObject.ORIGIN()))
    direction = info.Get(vtkDataObject.DIRECTION())
    if direction is not None and tuple(float(v) for v in direction) != _IDENTITY:
        raise _mismatch(errors.BadDataError, path, "Direction", "an axis-aligned image (Direction 1 0 0 0 1 0 0 0 1)",
                        " ".join(f"{v:g}" for v in direction))
    dims = tuple(int(extent[2 * axis + 1]) - int(extent[2 * axis]) + 1 for axis in range(3))
    if min(dims) < 1:
        raise _mismatch(errors.EmptyFieldError, path, "WholeExtent", "at least one point along each axis",
                        " ".join(str(e) for e in extent))
    first = tuple(o + int(extent[2 * axis]) * h for axis, (o, h) in enumerate(zip(origin, spacing)))
    return Grid(dims, first, spacing)  # type: ignore[arg-type]


def _pieces_xml(reader: Any) -> list[Any]:
    """The ``<Piece>`` elements of the file, as vtk's XML parser read them."""
    root = reader.GetXMLParser().GetRootElement()
    data = root.FindNestedElementWithName(VtkKind.POINTS.data_type)
    return [data.GetNestedElement(i) for i in range(data.GetNumberOfNestedElements())
            if data.GetNestedElement(i).GetName() == "Piece"]


def _point_set(path: Path, reader: Any) -> tuple[int, np.dtype]:
    """A point set's number of points and the type of its points; refuses lines, polygons and strips."""
    pieces = _pieces_xml(reader)
    for attribute, cell_kind in _REFUSED_CELLS:
        count = sum(int(piece.GetAttribute(attribute) or 0) for piece in pieces)
        if count:
            raise _mismatch(errors.BadDataError, path, "cells",
                            "points with vertex or poly-vertex cells only (a point set)", f"{count} {cell_kind} cells")
    points = sum(int(piece.GetAttribute("NumberOfPoints") or 0) for piece in pieces)
    point_type = None
    for piece in pieces:
        element = piece.FindNestedElementWithName("Points")
        array = element.FindNestedElementWithName("DataArray") if element is not None else None
        if array is not None:
            point_type = array.GetAttribute("type")
    if point_type is None:
        return points, np.dtype("float32")  # no points at all: float32, as vtkPoints makes them
    if point_type not in _POINT_TYPES:
        raise _mismatch(errors.BadDataError, path, "Points", "Float32 or Float64 coordinates", point_type)
    return points, _POINT_TYPES[point_type]


def read_header(path: os.PathLike | str, kind: VtkKind) -> VtkHeader:
    """Read and check one file's XML header (not its data).

    Raises ``FileOpenError`` (cannot open), ``BadMagicError`` (not a VTK XML file of ``kind``),
    ``CorruptIndexError`` (a header vtk cannot read), ``BadDataError`` (cell data, non-numeric arrays,
    lines, polygons or strips in a point set, a rotated image) or ``EmptyFieldError`` (an empty extent).
    """
    path = Path(path)
    reader = _open_reader(path, kind)
    arrays = _point_arrays(path, reader)
    if kind is VtkKind.IMAGE:
        if not arrays:
            raise _mismatch(errors.EmptyFieldError, path, "PointData", "at least one point-data array", "none")
        grid = _grid(path, reader)
        return VtkHeader(path, kind, arrays, grid.dims[0] * grid.dims[1] * grid.dims[2], grid=grid)
    if any(info.name == POSITION_FIELD for info in arrays):
        raise _mismatch(errors.BadDataError, path, f"point array '{POSITION_FIELD}'",
                        f"another name (the points become field '{POSITION_FIELD}')", "that name")
    points, point_dtype = _point_set(path, reader)
    return VtkHeader(path, kind, arrays, points, point_dtype=point_dtype)


def _check_agrees(header: VtkHeader, first: VtkHeader) -> None:
    """Frames share one grid (images), one point type (point sets) and the same arrays."""
    if header.grid is not None and first.grid is not None:
        for what, value, expected in (("grid dims", header.grid.dims, first.grid.dims),
                                      ("grid origin", header.grid.origin, first.grid.origin),
                                      ("grid spacing", header.grid.spacing, first.grid.spacing)):
            if value != expected:
                raise _mismatch(errors.CorruptIndexError, header.path, what,
                                f"{' x '.join(f'{v:g}' for v in expected)} as in {first.path}",
                                " x ".join(f"{v:g}" for v in value))
    if header.point_dtype != first.point_dtype:
        raise _mismatch(errors.CorruptIndexError, header.path, "Points", f"{first.point_dtype} as in {first.path}",
                        str(header.point_dtype))
    expected_arrays = {info.name: info for info in first.arrays}
    found = {info.name: info for info in header.arrays}
    for name, info in expected_arrays.items():
        if name not in found:
            raise _mismatch(errors.CorruptIndexError, header.path, f"point array '{name}'",
                            f"{_describe(info)} as in {first.path}", "no such array")
        if found[name] != info:
            raise _mismatch(errors.CorruptIndexError, header.path, f"point array '{name}'",
                            f"{_describe(info)} as in {first.path}", _describe(found[name]))
    for name, info in found.items():
        if name not in expected_arrays:
            raise _mismatch(errors.CorruptIndexError, header.path, f"point array '{name}'",
                            f"only the arrays of {first.path} ({', '.join(expected_arrays) or 'none'})",
                            f"an extra array of {_describe(info)}")


class VtkSource:
    """Opened and checked VTK files, one frame each; see :func:`open_vtk` and :func:`open_pvd`."""

    def __init__(self, path: Path, source_format: str, headers: list[VtkHeader], times: list[float] | None) -> None:
        first = headers[0]
        self.path = path
        self.headers = headers
        self.times = times
        self.frame_count = len(headers)
        self.total_bytes = sum(header.data_bytes for header in headers)
        self.fields = first.fields
        self.attributes: dict[str, AttributeValue] = {"source_format": source_format, "source_path": os.fspath(path)}
        if first.grid is not None:
            self.attributes.update(grid_dims=list(first.grid.dims), grid_origin=list(first.grid.origin),
                                   grid_spacing=list(first.grid.spacing), layout="linear")

    def frames(self) -> Iterator[SourceFrame]:
        for index, header in enumerate(self.headers):
            dataset = _read_data(header)
            if self.times is not None:
                time = self.times[index]
            else:
                time_value = _time_value(dataset)
                time = time_value if time_value is not None else float(index)
            arrays = _frame_arrays(header, dataset)
            bbox = header.grid.bbox() if header.grid is not None else _points_bbox(arrays[POSITION_FIELD])
            yield SourceFrame(time=time, bbox=bbox, pieces=_slices(self.fields, arrays))


def _read_data(header: VtkHeader) -> Any:
    """The file read whole by vtk; an error vtk reports is a ``CorruptIndexError`` naming the file."""
    reader = _open_reader(header.path, header.kind)
    with VtkErrors(reader) as caught:
        reader.Update()
    if caught.first() is not None:
        raise _mismatch(errors.CorruptIndexError, header.path, "data", f"{header.kind.data_type} data vtk can read",
                        f"vtk's error: {caught.first()}")
    return reader.GetOutput()


def _frame_arrays(header: VtkHeader, dataset: Any) -> dict[str, np.ndarray]:
    """Every field of the frame as an ``(points, components)`` view of vtk's arrays, checked against the
    header: vtk leaves out an array whose compressed data ends early, and says nothing."""
    # vtk (optional, slow to import): loaded only when VTK files are read or written
    from vtkmodules.util.numpy_support import vtk_to_numpy

    arrays: dict[str, np.ndarray] = {}
    point_data = dataset.GetPointData()
    for info in header.fields:
        if info.name == POSITION_FIELD and header.kind is VtkKind.POINTS:
            points = dataset.GetPoints()
            array = points.GetData() if points is not None else None
        else:
            array = point_data.GetArray(info.name)
        values: np.ndarray | None = vtk_to_numpy(array) if array is not None else None
        if values is None or values.shape[0] != header.points or values.dtype != info.dtype:
            found = "no such array" if values is None else f"{values.shape[0]} points of {values.dtype}"
            raise _mismatch(errors.TruncatedFileError, header.path, f"point array '{info.name}'",
                            f"{header.points} points of {info.dtype} x {info.components} (the file's header)",
                            f"{found}: the file ends early or its data is damaged")
        arrays[info.name] = values.reshape(header.points, info.components)
    return arrays


def _time_value(dataset: Any) -> float | None:
    """The ``TimeValue`` field-data array's first value (ParaView writes it), if the file has one."""
    array = dataset.GetFieldData().GetArray("TimeValue")
    if array is None or array.GetNumberOfTuples() < 1:
        return None
    return float(array.GetTuple1(0))


def _points_bbox(positions: np.ndarray) -> BBox | None:
    return _centre_bbox(positions) if positions.shape[0] else None


def _slices(fields: Sequence[FieldInfo], arrays: dict[str, np.ndarray]) -> Iterator[Piece]:
    """Each field's values in pieces of about :data:`_SLICE_BYTES` (one empty piece for no points)."""
    for info in fields:
        values = arrays[info.name]
        step = max(1, _SLICE_BYTES // (info.components * info.dtype.itemsize))
        for start in range(0, max(values.shape[0], 1), step):
            part = values[start : start + step]
            yield Piece(info.name, part, part.nbytes)


def open_vtk(paths: Sequence[os.PathLike | str], kind: VtkKind) -> VtkSource:
    """Read and check every file's header (one frame each, in the order given); see the module docstring."""
    if not paths:
        raise errors.UsageError(f"no .{kind.value} files given")
    headers = [read_header(path, kind) for path in paths]
    for header in headers[1:]:
        _check_agrees(header, headers[0])
    return VtkSource(Path(paths[0]), kind.value, headers, None)


@dataclass(frozen=True)
class PvdEntry:
    """One ``<DataSet>`` of a ``.pvd``: the file it names (resolved) and its timestep."""

    path: Path
    time: float


def read_pvd(path: os.PathLike | str) -> list[PvdEntry]:
    """The datasets a ParaView collection names, in timestep order (each file checked to exist).

    Raises ``FileOpenError`` (the ``.pvd`` cannot be read), ``CorruptIndexError`` (not a collection, a
    ``<DataSet>`` without ``file`` or with a ``timestep`` that is not a number, two datasets at one
    timestep), ``EmptyFieldError`` (no datasets) or ``MissingFileError`` naming the ``.pvd`` and the missing file.
    """
    path = Path(path)
    try:
        tree = ElementTree.parse(path)
    except OSError as error:
        raise open_error(path, error) from error
    except ElementTree.ParseError as error:
        raise _mismatch(errors.CorruptIndexError, path, f"line {error.position[0]}, column {error.position[1]}",
                        "a ParaView collection (XML)", str(error).split(":")[0]) from None
    root = tree.getroot()
    collection = root.find("Collection")
    if root.tag != "VTKFile" or root.get("type") != "Collection" or collection is None:
        raise _mismatch(errors.CorruptIndexError, path, "root element",
                        '<VTKFile type="Collection"> holding a <Collection>', f"<{root.tag} type={root.get('type')!r}>")
    entries: list[PvdEntry] = []
    for number, element in enumerate(collection.findall("DataSet")):
        name, timestep = element.get("file"), element.get("timestep")
        if not name:
            raise _mismatch(errors.CorruptIndexError, path, f"DataSet {number}", "a file attribute", "none")
        try:
            time = float(timestep) if timestep is not None else float(number)
        except ValueError:
            raise _mismatch(errors.CorruptIndexError, path, f"DataSet {number}", "a timestep that is a number",
                            repr(timestep)) from None
        file = path.parent / name
        if not file.is_file():
            raise errors.MissingFileError(f"{path}: DataSet {number} names {file}, which "
                                          f"{'is not a regular file' if file.exists() else 'does not exist'}")
        entries.append(PvdEntry(file, time))
    if not entries:
        raise _mismatch(errors.EmptyFieldError, path, "Collection", "at least one DataSet", "none")
    entries.sort(key=lambda entry: entry.time)  # stable: equal timesteps keep their order for the check below
    for before, after in zip(entries, entries[1:]):
        if before.time == after.time:
            raise _mismatch(errors.CorruptIndexError, path, f"timestep {after.time:g}",
                            "one dataset per timestep (parts of a step are not joined)",
                            f"{before.path.name} and {after.path.name}")
    return entries


def open_pvd(path: os.PathLike | str) -> VtkSource:
    """Read a ``.pvd`` and check every dataset's header; its datasets become frames in timestep order."""
    path = Path(path)
    entries = read_pvd(path)
    suffixes = {entry.path.suffix.lower() for entry in entries}
    kinds = {kind.value: kind for kind in VtkKind}
    if len(suffixes) != 1 or next(iter(suffixes)).lstrip(".") not in kinds:
        raise _mismatch(errors.BadDataError, path, "DataSet files", "all .vti or all .vtp files",
                        ", ".join(sorted(suffixes)))
    kind = kinds[next(iter(suffixes)).lstrip(".")]
    headers = [read_header(entry.path, kind) for entry in entries]
    for header in headers[1:]:
        _check_agrees(header, headers[0])
    return VtkSource(path, "pvd", headers, [entry.time for entry in entries])

