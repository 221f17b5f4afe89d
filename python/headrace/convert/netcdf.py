"""NetCDF files through xarray (the netCDF4 or h5netcdf engine): variables over time as fields on a grid.

- **Time dimension**: ``time_dim`` if given, or the variables' dimension at position ``time_axis``, else the dimension named ``time`` (any case), else the one
  unlimited dimension, else the one whose coordinate has ``axis = "T"`` or ``standard_name = "time"``.
  Each of its steps is a frame; a file without one is a single frame.
- **Variables**: ``variables`` if given, else every numeric data variable over the time dimension with one
  to three other dimensions (bounds variables are coordinates, not data). They must share those other
  dimensions (names, order and sizes): the container has one grid.
- Each variable is a field of one component, holding the values xarray decodes (``scale_factor`` and
  ``add_offset`` applied, ``_FillValue`` and ``missing_value`` as NaN, so packed integers become
  floats; times are left as numbers), in native byte order (float16 as float32, bool as uint8).
- **Grid**: the other dimensions in file order, slowest first, so the last one is x: ``grid_dims``
  ``[X, Y, Z]`` (1 for axes a 1-D or 2-D variable lacks), ``layout`` ``linear``. An axis whose coordinate
  is one-dimensional, numeric, uniform and increasing gives ``grid_origin`` (its first value) and
  ``grid_spacing``; any other axis counts points (origin 0, spacing 1) and is named in
  ``netcdf_index_axes``. ``netcdf_dims`` names the axes x first.
- **Frame time**: the time coordinate's value; a date (CF units ``<unit> since <date>``) as seconds since
  the first file's first time (``time_units`` says ``seconds since <that date>``; ``_times``), other values
  as stored; its units string in ``netcdf_time_units``; without a time coordinate the frame index.
- Several files are read one after another along time; they must agree on the variables, their types and
  dimensions; the grid's coordinates are the first file's.

A truncated NetCDF-4 (HDF5) file is found when it is opened (its superblock records its end). The netCDF
library reads the missing bytes of a truncated classic file as fill values, so a classic file shorter
than its variables' values is refused here; a cut shorter than its header goes unseen.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from headrace import errors
from headrace.convert import _arrays
from headrace.convert._arrays import FrameShape, Selection, array_pieces, bad_dataset, stored_dtype
from headrace.convert._times import DateClock, date_clock
from headrace.convert.hdf5_file import HDF5_SIGNATURE, open_hdf5_file
from headrace.convert.source import AttributeValue, BBox, FieldInfo, Piece, SourceFrame, bad_data, open_error

__all__ = ["NetcdfSource", "open_netcdf", "NETCDF_CLASSIC_MAGICS", "has_netcdf_classic_magic"]

# First bytes of NetCDF classic, 64-bit offset and 64-bit data files (NetCDF-4 files are HDF5).
NETCDF_CLASSIC_MAGICS = (b"CDF\x01", b"CDF\x02", b"CDF\x05")
# The smallest classic header: magic, record count and three empty lists (dimensions, attributes, variables).
_CLASSIC_HEADER_BYTES = 32


def has_netcdf_classic_magic(head: bytes) -> bool:
    """Whether a file's first bytes are those of a NetCDF classic file."""
    return head[:4] in NETCDF_CLASSIC_MAGICS


def _open_dataset(path: Path) -> Any:
    """``path`` as a lazy ``xarray.Dataset`` (nothing cached: values are read a selection at a time)."""
    # xarray (optional, slow to import): loaded only when a NetCDF file is read
    import xarray as xr

    try:
        return xr.open_dataset(path, decode_times=False, decode_timedelta=False, decode_coords="all", cache=False)
    except (OSError, ValueError) as error:
        raise _open_failure(path, error) from None


def _open_failure(path: Path, error: Exception) -> Exception:
    """Why xarray could not open ``path``, in one line: not NetCDF, truncated, or the library's word."""
    if isinstance(error, OSError) and error.errno is not None and error.errno > 0:
        return open_error(path, error)
    with open(path, "rb") as handle:
        head = handle.read(len(HDF5_SIGNATURE))
    if head.startswith(HDF5_SIGNATURE):
        open_hdf5_file(path).close()  # h5py says precisely what is wrong with the HDF5 layer (a cut, say)
        return bad_data(errors.BadDataError, path, 0, "a NetCDF-4 file", f"an HDF5 file xarray cannot read ({error})")
    if has_netcdf_classic_magic(head):
        return bad_data(errors.CorruptIndexError, path, 0, "a readable NetCDF classic header", f"an error ({error})")
    return bad_data(errors.BadMagicError, path, 0, "a NetCDF file (starting with CDF\\x01, CDF\\x02, CDF\\x05 or "
                    "the HDF5 signature)", repr(head))


def _check_classic_size(path: Path) -> None:
    """A classic file holds at least a header and every variable's values; netCDF reads missing bytes
    as fill, so a shorter file is refused here."""
    with open(path, "rb") as handle:
        if not has_netcdf_classic_magic(handle.read(4)):
            return
    try:
        # netCDF4 (optional): loaded only when a NetCDF classic file is checked
        import netCDF4
    except ImportError:  # only h5netcdf, which cannot read classic files anyway
        return
    with netCDF4.Dataset(path) as dataset:
        values = sum(math.prod(variable.shape) * np.dtype(variable.dtype).itemsize
                     for variable in dataset.variables.values())
    size = path.stat().st_size
    if size < _CLASSIC_HEADER_BYTES + values:
        raise bad_data(errors.TruncatedFileError, path, size,
                       f"at least {_CLASSIC_HEADER_BYTES + values} bytes (a header and {values} bytes of values)",
                       f"{size} bytes")


def _time_dimension(dataset: Any, path: Path, wanted: str | None) -> str | None:
    sizes = dict(dataset.sizes)
    if wanted is not None:
        if wanted not in sizes:
            raise bad_dataset(errors.BadDataError, path, f"dimension {wanted}", "a dimension of the file",
                              f"dimensions {', '.join(sizes) or 'none'}")
        return wanted
    named = [dim for dim in sizes if str(dim).lower() == "time"]
    unlimited = [dim for dim in dataset.encoding.get("unlimited_dims", ()) if dim in sizes]
    marked = [dim for dim in sizes if dim in dataset.variables and (
        dataset.variables[dim].attrs.get("axis") == "T" or dataset.variables[dim].attrs.get("standard_name") == "time")]
    for candidates in (named, unlimited, marked):
        if len(candidates) == 1:
            return str(candidates[0])
    return None


def _spatial_dims(variable: Any, time_dim: str | None) -> tuple[str, ...]:
    return tuple(str(dim) for dim in variable.dims if dim != time_dim)


def _dims_text(variable: Any, time_dim: str | None) -> str:
    return "(" + ", ".join(f"{dim}={variable.sizes[dim]}" for dim in _spatial_dims(variable, time_dim)) + ")"


def _choose_variables(dataset: Any, path: Path, time_dim: str | None, wanted: Sequence[str] | None) -> list[str]:
    """The variables to convert, checked: over the time dimension, one to three other dimensions, one
    grid, a type a container holds."""
    data_names = [str(name) for name in dataset.data_vars]
    if wanted:
        for name in wanted:
            if name not in dataset.variables:
                raise bad_dataset(errors.BadDataError, path, f"variable {name}", "a variable of the file",
                                  f"none by that name (data variables: {', '.join(data_names) or 'none'})")
        names = list(wanted)
    else:
        names = [name for name in data_names if (time_dim is None or time_dim in dataset[name].dims)
                 and 1 <= len(_spatial_dims(dataset[name], time_dim)) <= 3 and dataset[name].dtype.kind in "biuf"]
        if not names:
            over = f"over dimension {time_dim} " if time_dim else ""
            raise bad_data(errors.BadDataError, path, 0, f"a numeric data variable {over}with one to three other "
                           "dimensions", f"data variables {', '.join(data_names) or 'none'}")
        grids: dict[str, list[str]] = {}
        for name in names:
            grids.setdefault(_dims_text(dataset[name], time_dim), []).append(name)
        if len(grids) > 1:
            choices = "; ".join(f"{', '.join(group)} {dims}" for dims, group in grids.items())
            raise errors.UsageError(f"{path}: the data variables lie on different grids ({choices}); pick those of "
                                    "one grid with --variables")
    for name in names:
        variable = dataset[name]
        label = f"variable {name}"
        if time_dim is not None and time_dim not in variable.dims:
            raise bad_dataset(errors.BadDataError, path, label, f"dimension {time_dim}",
                              f"dimensions ({', '.join(map(str, variable.dims))})")
        if not 1 <= len(_spatial_dims(variable, time_dim)) <= 3:
            raise bad_dataset(errors.BadDataError, path, label, "one to three dimensions besides time",
                              f"dimensions ({', '.join(map(str, variable.dims))})")
        stored_dtype(variable.dtype, path, label)
        if any(variable.sizes[dim] == 0 for dim in _spatial_dims(variable, time_dim)):
            raise bad_dataset(errors.EmptyFieldError, path, label, "a grid of at least one point",
                              _dims_text(variable, time_dim))
        model = dataset[names[0]]
        if _dims_text(variable, time_dim) != _dims_text(model, time_dim):
            raise errors.UsageError(f"{path}: variables {names[0]} {_dims_text(model, time_dim)} and {name} "
                                    f"{_dims_text(variable, time_dim)} lie on different grids; convert them separately")
    return names


def _axis_placement(dataset: Any, dim: str, size: int) -> tuple[float, float] | None:
    """(origin, spacing) from ``dim``'s coordinate when it is 1-D, numeric, uniform and increasing."""
    if dim not in dataset.variables or dataset.variables[dim].dims != (dim,):
        return None
    coordinate = dataset.variables[dim]
    if coordinate.dtype.kind not in "iuf" or coordinate.size != size:
        return None
    values = np.asarray(coordinate.values, dtype=np.float64)
    if not np.isfinite(values).all():
        return None
    if size == 1:
        return float(values[0]), 1.0
    spacing = (values[-1] - values[0]) / (size - 1)
    precision = np.finfo(coordinate.dtype).eps if coordinate.dtype.kind == "f" else np.finfo(np.float64).eps
    tolerance = 1e-6 * abs(spacing) + 4 * precision * max(abs(values[0]), abs(values[-1]))
    if spacing <= 0 or np.abs(np.diff(values) - spacing).max() > tolerance:
        return None
    return float(values[0]), float(spacing)


def _time_coordinate(dataset: Any, time_dim: str | None) -> Any:
    """The numeric one-axis coordinate of the time dimension, else ``None``."""
    if time_dim is None or time_dim not in dataset.variables:
        return None
    coordinate = dataset.variables[time_dim]
    if coordinate.dims != (time_dim,) or coordinate.dtype.kind not in "iuf":
        return None
    return coordinate


def _frame_times(dataset: Any, time_dim: str | None, clock: DateClock | None) -> list[float] | None:
    """The frames' times: dates as seconds since the first file's first time, other numbers as stored."""
    coordinate = _time_coordinate(dataset, time_dim)
    if coordinate is None:
        return None
    if clock is not None:
        return clock.seconds(np.asarray(coordinate.values), coordinate.attrs.get("units"))
    return [float(value) for value in np.asarray(coordinate.values)]


def _time_axis_dimension(dataset: Any, path: Path, axis: int, wanted: Sequence[str] | None) -> str:
    """The dimension at position ``axis`` (``--time-axis``) of the variables to convert; they must agree."""
    names = list(wanted) if wanted else [str(name) for name in dataset.data_vars
                                         if dataset[name].dtype.kind in "biuf" and dataset[name].ndim > axis]
    dims = {str(dataset[name].dims[axis]) for name in names if name in dataset.variables and dataset[name].ndim > axis}
    if len(dims) != 1:
        found = ", ".join(f"{name} ({', '.join(map(str, dataset[name].dims))})" for name in names
                          if name in dataset.variables) or "none"
        raise errors.UsageError(f"{path}: --time-axis {axis}: expected variables whose axis {axis} is one dimension, "
                                f"found {found}; name it with --time-dim")
    return dims.pop()


@dataclass(frozen=True)
class _FilePlan:
    """What one file adds: its time steps (1 without a time dimension) and their times."""

    path: Path
    steps: int
    times: list[float] | None


class NetcdfSource:
    """NetCDF variables over time, opened and checked; see :func:`open_netcdf`."""

    def __init__(self, files: list[_FilePlan], fields: list[FieldInfo], time_dim: str | None,
                 shape: FrameShape, chunks: dict[str, tuple[int, ...] | None],
                 attributes: dict[str, AttributeValue], bbox: BBox) -> None:
        self.path = files[0].path
        self.fields = fields
        self._files = files
        self._time_dim = time_dim
        self._shape = shape
        self._chunks = chunks
        self._bbox = bbox
        self.attributes = attributes
        self.frame_count = sum(plan.steps for plan in files)
        self.total_bytes = self.frame_count * shape.elements * sum(info.dtype.itemsize for info in fields)

    def frames(self) -> Iterator[SourceFrame]:
        index = 0
        for plan in self._files:
            dataset = _open_dataset(plan.path)
            try:
                for step in range(plan.steps):
                    time = plan.times[step] if plan.times is not None else float(index)
                    yield SourceFrame(time=time, bbox=self._bbox, pieces=self._pieces(dataset, plan.path, step))
                    index += 1
            finally:
                dataset.close()

    def _pieces(self, dataset: Any, path: Path, step: int) -> Iterator[Piece]:
        for info in self.fields:
            variable = dataset[info.name]
            if self._time_dim is not None:
                variable = variable.isel({self._time_dim: step})
            yield from array_pieces(info.name, self._shape, info.dtype, _reader(path, info.name, variable, step),
                                    self._chunks[info.name])


def _reader(path: Path, name: str, frame: Any, step: int) -> Callable[[Selection], np.ndarray]:
    """Reads a selection of one frame of a variable; a failed read names the variable and the step."""
    def read(selection: Selection) -> np.ndarray:
        try:
            return np.asarray(frame[selection].values)
        except (OSError, RuntimeError) as error:
            raise bad_dataset(errors.BadDataError, path, f"variable {name}", f"values of time step {step} the "
                              "netCDF library can read", f"an error ({error})") from None

    return read


def _chunks(variable: Any, time_dim: str | None) -> tuple[int, ...] | None:
    """The variable's chunk extents along its spatial dimensions (NetCDF-4), so slabs follow chunks."""
    sizes = variable.encoding.get("chunksizes")
    if not sizes or len(sizes) != len(variable.dims):
        return None
    return tuple(int(size) for dim, size in zip(variable.dims, sizes) if dim != time_dim)


def open_netcdf(paths: Sequence[os.PathLike | str], *, variables: Sequence[str] | None = None,
                time_dim: str | None = None, time_axis: int | None = None) -> NetcdfSource:
    """Open NetCDF files and check the variables to convert (see the module docstring for the rules).

    Raises ``TruncatedFileError`` (a file cut short), ``BadMagicError`` (not NetCDF), ``CorruptIndexError``
    (an unreadable header, files that disagree), ``BadDataError`` (a variable or dimension not in the file,
    a type or shape a container cannot hold), ``EmptyFieldError`` (no time steps, an empty grid) and
    ``UsageError`` (variables on different grids).
    """
    files = [Path(path) for path in paths]
    if not files:
        raise errors.UsageError("no NetCDF files given")
    if time_dim is not None and time_axis is not None:
        raise errors.UsageError("give either --time-dim or --time-axis, not both")
    clock: DateClock | None = None
    plans: list[_FilePlan] = []
    first: Any = None
    names: list[str] = []
    found_time_dim: str | None = None
    for path in files:
        dataset = _open_dataset(path)
        with dataset:
            _check_classic_size(path)
            if first is None:
                if time_axis is not None:
                    time_dim = _time_axis_dimension(dataset, path, time_axis, variables)
                found_time_dim = _time_dimension(dataset, path, time_dim)
                names = _choose_variables(dataset, path, found_time_dim, variables)
                coordinate = _time_coordinate(dataset, found_time_dim)
                if coordinate is not None:
                    clock = date_clock(np.asarray(coordinate.values), coordinate.attrs.get("units"),
                                       coordinate.attrs.get("calendar"))
                first = _Model(files[0], dataset, found_time_dim, names)
                if clock is not None:
                    first.attributes["time_units"] = clock.time_units
            else:
                first.check(path, dataset)
            steps = int(dataset.sizes[found_time_dim]) if found_time_dim is not None else 1
            plans.append(_FilePlan(path, steps, _frame_times(dataset, found_time_dim, clock)))
    if sum(plan.steps for plan in plans) == 0:
        raise bad_dataset(errors.EmptyFieldError, files[0], f"dimension {found_time_dim}", "at least one time step",
                          "0")
    return NetcdfSource(plans, first.fields, found_time_dim, first.shape, first.chunks, first.attributes, first.bbox)


class _Model:
    """The first file's variables, grid and attributes, which the other files must match."""

    def __init__(self, path: Path, dataset: Any, time_dim: str | None, names: list[str]) -> None:
        self.path = path
        self.time_dim = time_dim
        self.names = names
        variable = dataset[names[0]]
        self.dims = _spatial_dims(variable, time_dim)
        self.dims_text = _dims_text(variable, time_dim)
        self.fields = [FieldInfo(name, stored_dtype(dataset[name].dtype, path, f"variable {name}"), 1) for name in names]
        self.chunks = {name: _chunks(dataset[name], time_dim) for name in names}
        sizes = tuple(int(variable.sizes[dim]) for dim in self.dims)
        grid = (1,) * (3 - len(sizes)) + sizes
        self.shape = FrameShape(sizes, 1, (grid[0], grid[1], grid[2]))
        x_first = list(reversed(self.dims))
        origin, spacing, index_axes = [0.0, 0.0, 0.0], [1.0, 1.0, 1.0], []
        for axis, (dim, size) in enumerate(zip(x_first, reversed(sizes))):
            placement = _axis_placement(dataset, dim, size)
            if placement is None:
                index_axes.append(dim)
            else:
                origin[axis], spacing[axis] = placement
        grid_attributes, self.bbox = _arrays.grid_attributes((grid[0], grid[1], grid[2]), origin, spacing)
        self.attributes: dict[str, AttributeValue] = {
            "source_format": "netcdf", "source_path": os.fspath(path), **grid_attributes,
            "netcdf_dims": ",".join(x_first),
        }
        if index_axes:
            self.attributes["netcdf_index_axes"] = ",".join(index_axes)
        if time_dim is not None:
            self.attributes["netcdf_time_dim"] = time_dim
            units = dataset.variables[time_dim].attrs.get("units") if time_dim in dataset.variables else None
            if isinstance(units, str):
                self.attributes["netcdf_time_units"] = units

    def check(self, path: Path, dataset: Any) -> None:
        """Another file holds the same variables, types and dimensions."""
        if self.time_dim is not None and self.time_dim not in dataset.sizes:
            raise bad_dataset(errors.CorruptIndexError, path, f"dimension {self.time_dim}",
                              f"the time dimension of {self.path}", "no such dimension")
        for info in self.fields:
            label = f"variable {info.name}"
            if info.name not in dataset.variables:
                raise bad_dataset(errors.CorruptIndexError, path, label, f"a variable as in {self.path}",
                                  "none by that name")
            variable = dataset[info.name]
            if self.time_dim is not None and self.time_dim not in variable.dims:
                raise bad_dataset(errors.CorruptIndexError, path, label, f"dimension {self.time_dim}",
                                  f"dimensions ({', '.join(map(str, variable.dims))})")
            if _dims_text(variable, self.time_dim) != self.dims_text:
                raise bad_dataset(errors.CorruptIndexError, path, label, f"dimensions {self.dims_text} as in "
                                  f"{self.path}", _dims_text(variable, self.time_dim))
            dtype = stored_dtype(variable.dtype, path, label)
            if dtype != info.dtype:
                raise bad_dataset(errors.CorruptIndexError, path, label, f"dtype {info.dtype} as in {self.path}",
                                  f"dtype {dtype}")
