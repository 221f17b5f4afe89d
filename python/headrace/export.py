"""Containers out to files other tools open: :func:`to_vtk` writes VTK XML files and a ParaView series.

>>> from headrace.export import to_vtk
>>> to_vtk("volume.hrc", "volume_vtk")                   # volume_0000.vti, ..., volume.pvd
>>> to_vtk("amr.hrc", "amr_vtk")                         # amr_0000.vthb + amr_0000/, ..., amr.pvd
>>> to_vtk("run.hrc", "run_vtk", frames=slice(0, 8))     # particles: run_0000.vtp, ..., run.pvd
>>> to_vtk("flow.hrc", "flow_vtk", frames=-1, compression="zlib")

- **Grids** (a container with ``grid_dims``: volumes, flow fields in any layout) become one ``.vti`` per
  frame: ``grid_dims`` points from ``grid_origin`` ``grid_spacing`` apart, every field exported as point
  data, read with :meth:`headrace.Dataset.read` in its grid shape whatever its layout on disk. The first
  one-component field is the active scalars, the first three-component field the active vectors.
- **AMR** (``layout = "amr"``, :mod:`headrace.amr`: ``headrace generate amr``, converted AMReX plotfiles)
  becomes one ``.vthb`` per frame, VTK's overlapping AMR (``vtkOverlappingAMR``, written by
  ``vtkXMLUniformGridAMRWriter``): the domain's lower corner as its origin, each level's cell size as its
  spacing and the ratio between levels as its refinement ratio; each brick one block of its level, its
  cell box in that level's cell indices, every chosen field (one value per cell) as cell data, the first
  the active scalars. Bricks hold leaf cells only, so no block lies under a finer one (nothing is
  blanked) and a level whose cells are all refined has no block. The blocks are ``.vti`` files in the
  folder ``NAME_0007/`` beside ``NAME_0007.vthb``.
- **Particles** become one ``.vtp`` per frame: the positions as points, each with a vertex cell (so
  ParaView draws them), the other fields as point data. The positions are field ``position`` (x3, as
  ``headrace convert`` makes of a ``.vtp``) or else the first three values of field ``particles`` (x8,
  ``x y z radius r g b a``), whose radius and colour become point data ``radius`` and ``colour``.
- ``NAME.pvd`` names the frames' files with each frame's time: ParaView opens it as a time series.

Files are named after the container (``NAME_0007.vti``: the frame's index in the container); with
``force``, a frame's block folder replaces the one of the same name. They are
written with vtk's XML writers (appended raw binary data, UInt64 headers; ``compression`` zlib, lz4 or
lzma compresses it) into a hidden folder beside ``out_dir`` and moved into ``out_dir`` once all are
written, the ``.pvd`` last: a failure or an interrupt leaves nothing. vtk writes a file whole, so one
frame of the exported fields is in memory at a time.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Union

import numpy as np

from headrace import errors
from headrace.amr import topology_of
from headrace.convert.vtk import POSITION_FIELD
from headrace.dataset import open as open_dataset

__all__ = ["Compression", "FrameSelection", "VtkExport", "select_frames", "to_vtk", "PARTICLE_RECORD_ARRAYS"]

# Which frames: all (None), one index, a slice or indices; negative indices count from the end.
FrameSelection = Union[int, slice, Sequence[int], None]
# Point-data arrays the x8 ``particles`` record adds beside its positions: name -> its components.
PARTICLE_RECORD_ARRAYS = {"radius": slice(3, 4), "colour": slice(4, 8)}
_POINT_DTYPES = (np.dtype("float32"), np.dtype("float64"))


class Compression(Enum):
    """How vtk's XML writer stores the appended data."""

    NONE = "none"
    ZLIB = "zlib"
    LZ4 = "lz4"
    LZMA = "lzma"


@dataclass(frozen=True)
class VtkExport:
    """What :func:`to_vtk` wrote: the ``.pvd`` series, one file per frame, the frames and the fields."""

    series: Path
    files: list[Path]
    frames: list[int]
    fields: list[str]
    kind: str  # "vti", "vtp" or "vthb"


def select_frames(count: int, frames: FrameSelection, path: os.PathLike | str) -> list[int]:
    """The frame indices ``frames`` selects of ``count`` (all for ``None``); ``UsageError`` for an index
    out of range or a selection of no frame."""
    span = f"0 to {count - 1}, or -{count} to -1 from the end" if count else "none"
    if frames is None:
        chosen = list(range(count))
    elif isinstance(frames, slice):
        chosen = list(range(*frames.indices(count)))
    else:
        indices = [frames] if isinstance(frames, (int, np.integer)) else list(frames)
        for index in indices:
            if not -count <= index < count:
                raise errors.UsageError(f"{path}: frame {index} out of range: it has {count} frames ({span})")
        chosen = [int(index) % count for index in indices]
    if not chosen:
        raise errors.UsageError(f"{path}: the frames asked for select none of its {count} frames ({span})")
    return chosen


def to_vtk(
    path: os.PathLike | str,
    out_dir: os.PathLike | str,
    *,
    frames: FrameSelection = None,
    fields: Sequence[str] | None = None,
    compression: Compression | str = Compression.NONE,
    force: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> VtkExport:
    """Write frames ``frames`` of container ``path`` as VTK XML files and a ``.pvd`` into ``out_dir``.

    ``fields``: the fields to export (default all; a particle container's positions always). ``out_dir``
    must not exist or be empty; ``force`` writes into a folder holding files, replacing those of the same
    names and leaving the others. ``progress(done, total)`` is called after each frame. Raises
    ``UsageError`` for a container that is neither a grid, AMR nor particles, a field not on the grid, not
    one per particle or not one value per AMR cell, unknown fields or frames, frames that share a time, or
    an output folder in the way.
    """
    try:
        kind = Compression(compression)
    except ValueError:
        known = ", ".join(c.value for c in Compression)
        raise errors.UsageError(f"unknown compression {compression!r} (one of {known})") from None
    ds = open_dataset(path)
    indices = select_frames(len(ds.frames), frames, ds.path)
    _check_times(ds, indices)
    plan: _GridPlan | _AmrPlan | _ParticlePlan
    if ds.attributes.get("layout") == "amr":
        plan = _AmrPlan(ds, fields, indices)
    elif "grid_dims" in ds.attributes:
        plan = _GridPlan(ds, fields, indices)
    else:
        plan = _ParticlePlan(ds, fields, indices)
    out = Path(out_dir)
    _check_output_folder(out, force)
    stem = Path(ds.path).stem
    width = max(4, len(str(len(ds.frames) - 1)))
    names = [f"{stem}_{index:0{width}d}.{plan.suffix}" for index in indices]
    series = f"{stem}.pvd"
    with _staged(out) as staging:
        for done, (index, name) in enumerate(zip(indices, names), start=1):
            _write_dataset(plan.dataset(index), plan.suffix, staging / name, kind)
            if isinstance(plan, _AmrPlan):
                plan.exact_metadata(staging / name)
            if progress is not None:
                progress(done, len(indices))
        _write_pvd(staging / series, [(ds.frames[index].time, name) for index, name in zip(indices, names)])
    return VtkExport(out / series, [out / name for name in names], indices, plan.fields, plan.suffix)


def _check_times(ds: Any, indices: list[int]) -> None:
    """ParaView shows datasets of one timestep together, as parts of one step: frames need their own times."""
    seen: dict[float, int] = {}
    for index in indices:
        time = ds.frames[index].time
        if time in seen:
            raise errors.UsageError(f"{ds.path}: frames {seen[time]} and {index} share time {time:g}; a .pvd series "
                                    "would show them as one step (export them separately)")
        seen[time] = index


def _chosen_fields(ds: Any, fields: Sequence[str] | None) -> list[str]:
    names = [field.name for field in ds.fields]
    if fields is None:
        return names
    unknown = [name for name in fields if name not in names]
    if unknown:
        raise errors.UsageError(f"{ds.path}: no field {', '.join(map(repr, unknown))} (it has {', '.join(names)})")
    return list(dict.fromkeys(fields))


class _GridPlan:
    """A grid container's frames as ``vtkImageData``: every chosen field on the grid's points."""

    suffix = "vti"

    def __init__(self, ds: Any, fields: Sequence[str] | None, indices: list[int]) -> None:
        self.ds = ds
        attributes = ds.attributes
        self.dims = tuple(int(d) for d in attributes["grid_dims"])
        self.origin = tuple(float(v) for v in attributes.get("grid_origin", (0.0, 0.0, 0.0)))
        self.spacing = tuple(float(v) for v in attributes.get("grid_spacing", (1.0, 1.0, 1.0)))
        self.fields = _chosen_fields(ds, fields)
        grid = self.dims[::-1]  # (z, y, x), as a grid field reads
        for name in self.fields:
            for index in indices:
                shape = ds.shape(index, name)  # blocks and partitions read in grid order, their padding dropped
                if tuple(shape[:3]) != grid:
                    raise errors.UsageError(
                        f"{ds.path}: field '{name}' reads as {shape} in frame {index}, not one value per grid "
                        f"point ({' x '.join(map(str, self.dims))}); leave it out with --fields")

    def dataset(self, index: int) -> Any:
        # vtk (optional, slow to import): loaded only when VTK files are read or written
        from vtkmodules.vtkCommonDataModel import vtkImageData

        image = vtkImageData()
        image.SetDimensions(*self.dims)
        image.SetOrigin(*self.origin)
        image.SetSpacing(*self.spacing)
        point_data = image.GetPointData()
        for name in self.fields:
            components = self.ds.field(name).components
            values = self.ds.read(index, name).reshape(-1, components)  # (z, y, x[, c]): x fastest, as VTK
            point_data.AddArray(_vtk_array(name, values))
            if components == 1 and point_data.GetScalars() is None:
                point_data.SetActiveScalars(name)
            if components == 3 and point_data.GetVectors() is None:
                point_data.SetActiveVectors(name)
        return image


class _AmrPlan:
    """An AMR container's frames as ``vtkOverlappingAMR``: each brick a block of its level (a grid of its
    cells, its box in the level's cell indices), every chosen field as cell data."""

    suffix = "vthb"

    def __init__(self, ds: Any, fields: Sequence[str] | None, indices: list[int]) -> None:
        self.ds = ds
        topology = topology_of(ds.attributes, ds.path)
        assert topology is not None  # layout "amr" always describes one (or topology_of raised)
        self.topology = topology
        self.fields = _chosen_fields(ds, fields)
        components = {field.name: field.components for field in ds.fields}
        for name in self.fields:
            if components[name] != 1:
                raise errors.UsageError(f"{ds.path}: field '{name}' has {components[name]} components per "
                                        "element, not one value per AMR cell; leave it out with --fields")
            for index in indices:
                elements = ds.element_count(index, name)
                if elements != topology.cell_count:
                    raise errors.UsageError(
                        f"{ds.path}: field '{name}' holds {elements} elements in frame {index}, not one per AMR "
                        f"cell ({topology.cell_count}); leave it out with --fields")
        self.blocks_per_level = np.bincount(topology.bricks[:, 0], minlength=topology.levels).tolist()

    def dataset(self, index: int) -> Any:
        # vtk (optional, slow to import): loaded only when VTK files are read or written
        from vtkmodules.vtkCommonDataModel import vtkAMRBox, vtkOverlappingAMR, vtkUniformGrid

        topology = self.topology
        amr = vtkOverlappingAMR()
        try:
            amr.Initialize(self.blocks_per_level)  # vtk 9.6 and later
        except TypeError:
            amr.Initialize(topology.levels, self.blocks_per_level)  # vtk 9.2 to 9.5
        amr.SetOrigin(topology.origin)
        for level in range(topology.levels):
            amr.SetSpacing(level, topology.cell_size(level))
            # Between this level and the next; 2 on the finest, as vtk sets it for a level with none below.
            amr.SetRefinementRatio(level, topology.refinement[level] if level < len(topology.refinement) else 2)
        values = {name: self.ds.read(index, name).reshape(-1) for name in self.fields}
        offsets = topology.offsets.tolist()
        placed = [0] * topology.levels
        for brick, (level, x, y, z, nx, ny, nz) in enumerate(topology.bricks.tolist()):
            grid = vtkUniformGrid()
            grid.SetOrigin(*topology.brick_world_bounds(brick)[0])
            grid.SetSpacing(*topology.cell_size(level))
            grid.SetDimensions(nx + 1, ny + 1, nz + 1)  # points: one more than cells along each axis
            cell_data = grid.GetCellData()
            for name in self.fields:  # brick order: x fastest, then y, then z, as VTK's cells
                cell_data.AddArray(_vtk_array(name, values[name][offsets[brick]:offsets[brick + 1]]))
            if self.fields:
                cell_data.SetActiveScalars(self.fields[0])
            block = placed[level]
            placed[level] += 1
            amr.SetAMRBox(level, block, vtkAMRBox((x, y, z), (x + nx - 1, y + ny - 1, z + nz - 1)))
            amr.SetDataSet(level, block, grid)
        return amr

    def exact_metadata(self, path: Path) -> None:
        """vtk writes the ``.vthb``'s origin and spacings with 6 digits; write them as exactly as the blocks'."""
        tree = ElementTree.parse(path)
        root = tree.getroot().find("vtkOverlappingAMR")
        assert root is not None  # vtkXMLUniformGridAMRWriter's own layout
        root.set("origin", " ".join(repr(float(v)) for v in self.topology.origin))
        for block in root.iter("Block"):
            spacing = self.topology.cell_size(int(block.get("level", "0")))
            block.set("spacing", " ".join(repr(float(v)) for v in spacing))
        tree.write(path, encoding="utf-8", xml_declaration=True)


class _ParticlePlan:
    """A particle container's frames as ``vtkPolyData``: positions as points with vertex cells, the
    other chosen fields (and the x8 record's radius and colour) as point data."""

    suffix = "vtp"

    def __init__(self, ds: Any, fields: Sequence[str] | None, indices: list[int]) -> None:
        self.ds = ds
        by_name = {field.name: field for field in ds.fields}
        position = by_name.get(POSITION_FIELD)
        record = by_name.get("particles")
        if position is not None and position.components == 3:
            self.positions, self.record = POSITION_FIELD, False
        elif record is not None and record.components == 8:
            self.positions, self.record = "particles", True
        else:
            raise errors.UsageError(
                f"{ds.path}: neither a grid (no attribute grid_dims), AMR (no layout 'amr') nor particles (no "
                f"field '{POSITION_FIELD}' of 3 components or 'particles' of 8): nothing says where its elements are")
        if np.dtype(by_name[self.positions].dtype) not in _POINT_DTYPES:
            raise errors.UsageError(f"{ds.path}: field '{self.positions}' holds {by_name[self.positions].dtype}; "
                                    "VTK points are float32 or float64")
        others = [name for name in _chosen_fields(ds, fields) if name != self.positions]
        clashes = [name for name in others if self.record and name in PARTICLE_RECORD_ARRAYS]
        if clashes:
            raise errors.UsageError(f"{ds.path}: field '{clashes[0]}' has the name of the 'particles' record's "
                                    "own point data; leave it out with --fields")
        self.others = others
        self.fields = [self.positions, *others]
        for index in indices:
            count = ds.element_count(index, self.positions)
            for name in others:
                elements = ds.element_count(index, name)
                if elements != count:
                    raise errors.UsageError(
                        f"{ds.path}: field '{name}' holds {elements} elements in frame {index}, not one per "
                        f"particle ({count}); leave it out with --fields")

    def dataset(self, index: int) -> Any:
        # vtk (optional, slow to import): loaded only when VTK files are read or written
        from vtkmodules.util.numpy_support import numpy_to_vtk
        from vtkmodules.vtkCommonCore import vtkPoints
        from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkPolyData

        values = self.ds.read(index, self.positions)
        positions = np.ascontiguousarray(values[:, 0:3])
        count = positions.shape[0]
        points = vtkPoints()
        points.SetData(numpy_to_vtk(positions))
        vertices = vtkCellArray()
        vertices.SetData(1, numpy_to_vtk(np.arange(count, dtype=np.int64)))  # one vertex cell per point
        poly = vtkPolyData()
        poly.SetPoints(points)
        poly.SetVerts(vertices)
        point_data = poly.GetPointData()
        if self.record:
            for name, columns in PARTICLE_RECORD_ARRAYS.items():
                point_data.AddArray(_vtk_array(name, np.ascontiguousarray(values[:, columns])))
        for name in self.others:
            point_data.AddArray(_vtk_array(name, self.ds.read(index, name)))
        return poly


def _vtk_array(name: str, values: np.ndarray) -> Any:
    """``values`` ((n, c)) as a vtk array named ``name``, sharing their memory (vtk keeps a reference)."""
    # vtk (optional, slow to import): loaded only when VTK files are read or written
    from vtkmodules.util.numpy_support import numpy_to_vtk

    columns = values.shape[1] if values.ndim == 2 else 1
    array = numpy_to_vtk(values.reshape(-1) if columns == 1 else values)
    array.SetName(name)
    return array


def _write_dataset(dataset: Any, suffix: str, path: Path, compression: Compression) -> None:
    # vtk (optional, slow to import): loaded only when VTK files are read or written
    from vtkmodules.vtkIOXML import vtkXMLImageDataWriter, vtkXMLPolyDataWriter, vtkXMLUniformGridAMRWriter

    writers = {"vti": vtkXMLImageDataWriter, "vtp": vtkXMLPolyDataWriter, "vthb": vtkXMLUniformGridAMRWriter}
    writer = writers[suffix]()
    writer.SetFileName(os.fspath(path))
    writer.SetInputData(dataset)
    writer.SetDataModeToAppended()
    writer.EncodeAppendedDataOff()
    writer.SetHeaderTypeToUInt64()
    {
        Compression.NONE: writer.SetCompressorTypeToNone,
        Compression.ZLIB: writer.SetCompressorTypeToZLib,
        Compression.LZ4: writer.SetCompressorTypeToLZ4,
        Compression.LZMA: writer.SetCompressorTypeToLZMA,
    }[compression]()
    with _vtk_errors() as caught:
        written = writer.Write()
    if not written or caught:
        raise OSError(f"{path}: vtk could not write the file: {caught[0] if caught else 'no reason given'}")


@contextmanager
def _vtk_errors() -> Iterator[list[str]]:
    """The errors every vtk object reports while the block runs, one line each, instead of vtk printing
    them: a writer's own and those of the writers it makes inside (an AMR dataset's block files), which
    an observer on the writer does not see. vtk's output window passes them all to its observer; neither
    it nor vtk's logger prints any meanwhile."""
    # vtk (optional, slow to import): loaded only when VTK files are read or written
    from vtkmodules.util.misc import calldata_type
    from vtkmodules.vtkCommonCore import VTK_STRING, vtkCommand, vtkLogger, vtkObject, vtkOutputWindow

    messages: list[str] = []

    @calldata_type(VTK_STRING)
    def collect(caller: Any, event: str, text: str) -> None:
        lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
        said = [line for line in lines if not line.startswith("ERROR: In ")]  # "ERROR: In file.cxx, line N"
        messages.append(re.sub(r"^\w+ \(0x[0-9a-fA-F]+\): ", "", said[0] if said else text.strip()))

    window = vtkOutputWindow.GetInstance()
    display, mode = vtkObject.GetGlobalWarningDisplay(), window.GetDisplayMode()
    verbosity = vtkLogger.GetCurrentVerbosityCutoff()
    vtkObject.GlobalWarningDisplayOn()
    window.SetDisplayModeToNever()
    vtkLogger.SetStderrVerbosity(vtkLogger.VERBOSITY_OFF)
    tag = window.AddObserver(vtkCommand.ErrorEvent, collect)
    try:
        yield messages
    finally:
        window.RemoveObserver(tag)
        vtkLogger.SetStderrVerbosity(verbosity)
        window.SetDisplayMode(mode)
        vtkObject.SetGlobalWarningDisplay(display)


def _write_pvd(path: Path, entries: list[tuple[float, str]]) -> None:
    """A ParaView collection naming each file with its time (``<DataSet timestep=... file=...>``)."""
    byte_order = "LittleEndian" if sys.byteorder == "little" else "BigEndian"
    root = ElementTree.Element("VTKFile", type="Collection", version="0.1", byte_order=byte_order)
    collection = ElementTree.SubElement(root, "Collection")
    for time, name in entries:
        ElementTree.SubElement(collection, "DataSet", timestep=repr(float(time)), group="", part="0", file=name)
    tree = ElementTree.ElementTree(root)
    ElementTree.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)


def _check_output_folder(out: Path, force: bool) -> None:
    if not out.parent.is_dir():
        raise errors.UsageError(f"{out}: its folder {out.parent} does not exist")
    if out.exists() and not out.is_dir():
        raise errors.UsageError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise errors.UsageError(f"{out} holds files: --force writes into it, replacing files of the same names")


@contextmanager
def _staged(out: Path) -> Iterator[Path]:
    """A hidden folder beside ``out`` to write into; when the block ends, it becomes ``out`` (or its entries
    move into an existing ``out``: folders first, replacing those of the same name, then files, the ``.pvd``
    last); otherwise it is removed with all it holds."""
    staging = out.parent / f".{out.name}.{secrets.token_hex(4)}.partial"
    staging.mkdir()
    try:
        yield staging
        if out.is_dir():
            for entry in sorted(staging.iterdir(), key=lambda entry: (entry.suffix == ".pvd", not entry.is_dir())):
                target = out / entry.name
                if entry.is_dir() and target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)  # a frame's block folder: none of its old blocks may stay
                os.replace(entry, target)
        else:
            os.rename(staging, out)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
