"""A field over every frame as one lazy array: :class:`FieldArray` (NumPy-style indexing that reads only
what it selects), a dask array over it (:func:`to_dask`) and an xarray Dataset of the fields
(:func:`to_xarray`). dask and xarray are optional: imported only here, when asked for (docs/arrays.md).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from headrace.arrays import field_shape, frame_index, read, region_axes
from headrace.container import OpenContainer
from headrace.errors import OutOfRangeError, UsageError

__all__ = ["FieldArray", "to_dask", "to_xarray"]


def _optional(module: str, wanted_by: str) -> Any:
    """An optional dependency, or an ImportError saying what needs it and how to get it."""
    try:
        return importlib.import_module(module)
    except ImportError as missing:
        package = module.split(".")[0]
        raise ImportError(f"{wanted_by} needs {package}, which is not installed (pip install {package})") from missing


def _cover(index: Any, size: int, axis: str) -> tuple[slice, Any]:
    """An index along an axis of ``size`` as (the step-1 slice covering what it selects, the same index
    relative to that slice): reading the covering box and applying the relative indices is NumPy's
    indexing of the whole, with nothing outside the box read."""
    if isinstance(index, slice):
        steps = range(*index.indices(size))
        if not steps:
            return slice(0, 0), slice(None)
        low, high = min(steps[0], steps[-1]), max(steps[0], steps[-1])
        end = steps[-1] - low + (1 if steps.step > 0 else -1)
        return slice(low, high + 1), slice(steps[0] - low, None if end < 0 else end, steps.step)
    if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
        if not -size <= index < size:
            raise OutOfRangeError(f"index {index} out of range for {axis} of {size}")
        return slice(int(index) % size, int(index) % size + 1), 0
    chosen = np.asarray(index)
    if chosen.size == 0:  # [] is float64 to NumPy, an empty selection to an index
        chosen = chosen.astype(np.int64)
    if chosen.dtype == bool and chosen.shape == (size,):
        chosen = np.flatnonzero(chosen)
    if chosen.dtype.kind not in "iu" or (chosen.size and not (-size <= chosen.min() and chosen.max() < size)):
        raise UsageError(f"index {index!r}: {axis} of {size} takes integers, slices, integer arrays in range, or a mask "
                         f"of {size}")
    chosen = chosen.astype(np.int64) % max(size, 1)
    if not chosen.size:
        return slice(0, 0), chosen
    return slice(int(chosen.min()), int(chosen.max()) + 1), chosen - chosen.min()


class FieldArray:
    """Field ``field`` of every frame as one array of shape ``(frames, *shape of a frame)``.

    ``array[t]`` is ``ds.read(t, field)``; ``array[t, z0:z1, y0:y1, x0:x1]`` reads only the chunks of
    that box (``array[t, a:b]`` a range of elements). Indexing is NumPy's (integers, slices of any step,
    integer arrays, masks, ``...``): the frames it selects are read, each once, as the box covering
    what it selects on the grid or element axes, and the index applied to that. Read options
    (``backend``, ``verify``, ``stored_order``, I/O knobs) apply to every read. Nothing is read until
    indexed; ``shape`` comes from the index.
    """

    def __init__(self, dataset: OpenContainer, field: str | None = None, **read_options: Any) -> None:
        self.dataset = dataset
        self.field = field if field is not None else dataset.fields[0].name
        info = dataset.field(self.field)
        self.dtype = np.dtype(info.dtype)
        self._read_options = read_options
        self._read_arguments = _read_arguments(read_options)
        self._stored_order = bool(read_options.get("stored_order", False))

    def frame_shape(self, frame: int) -> tuple[int, ...]:
        """The shape of one frame's read (from the index)."""
        return field_shape(self.dataset, frame, self.field, stored_order=self._stored_order)

    @property
    def shape(self) -> tuple[int, ...]:
        """``(frames, *shape of a frame)``; UsageError when the frames' shapes differ (particles gained or lost)."""
        shapes = {self.frame_shape(t) for t in range(len(self.dataset.frames))}
        self._one_shape(shapes)
        return (len(self.dataset.frames), *(shapes.pop() if shapes else self.frame_shape(0)))

    def _one_shape(self, shapes: set[tuple[int, ...]]) -> None:
        """UsageError, saying how they differ, unless frames of these shapes have one shape."""
        if len(shapes) > 1:
            if len({shape[1:] for shape in shapes}) == 1:  # elements gained or lost
                counts = sorted(shape[0] for shape in shapes)
                held = f"holds {counts[0]} to {counts[-1]} elements a frame"
            else:
                held = f"has frames of shapes {' and '.join(map(str, sorted(shapes)[:2]))}"
            raise UsageError(f"{self.dataset.path}: field {self.field!r} {held}; one array over frames needs the same "
                             "shape in each (read frames one by one)")

    @property
    def ndim(self) -> int:
        return 1 + len(self.frame_shape(0)) if self.dataset.frames else 1

    def __len__(self) -> int:
        return len(self.dataset.frames)

    def __iter__(self) -> Iterator[np.ndarray]:
        """Each frame's array in turn (``array[0]``, ``array[1]``, ...), read as it is reached."""
        for frame in range(len(self)):
            yield self[frame]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """Every frame read into one NumPy array (``numpy.asarray(ds.array("x"))``): ``shape`` must be one
        shape (a UsageError says so for frames of different sizes)."""
        values = self[...]
        return values if dtype is None else values.astype(dtype, copy=False)

    def __repr__(self) -> str:
        return f"FieldArray({self.dataset.path!r}, {self.field!r}, frames={len(self)}, dtype={self.dtype})"

    def __getitem__(self, key: Any) -> np.ndarray:
        """NumPy's indexing of the whole array, reading only the frames and the box it selects."""
        items = list(key) if isinstance(key, tuple) else [key]
        at = next((i for i, item in enumerate(items) if item is Ellipsis), None)
        if at is not None:
            items[at:at + 1] = [slice(None)] * (self.ndim - len(items) + 1)
        if len(items) > self.ndim:
            raise UsageError(f"index {key!r}: {self!r} has {self.ndim} axes")
        frames, frame_index_relative = self._frames_of(items[0] if items else slice(None))
        reference = frames[0] if frames else frame_index(self.dataset, 0)  # a shape for no frames: the first's
        axes = region_axes(self.dataset, reference, self.field, stored_order=self._stored_order)
        names = ("z", "y", "x") if len(axes) == 3 else ("element",)
        region: list[slice] = []
        relative: list[Any] = []
        for item, size, name in zip(items[1:1 + len(axes)], axes, names):
            covering, within = _cover(item, size, name)
            region.append(covering)
            relative.append(within)
        box = field_shape(self.dataset, reference, self.field, region=tuple(region), stored_order=self._stored_order)
        stacked = np.empty((len(frames), *box), self.dtype)
        for at, frame in enumerate(frames):
            read(self.dataset, frame, self.field, region=tuple(region), out=stacked[at], **self._read_arguments)
        return stacked[tuple([frame_index_relative, *relative, *items[1 + len(axes):]])]

    def _frames_of(self, index: Any) -> tuple[list[int], Any]:
        """The frames an index selects, each once in order, and the index relative to their stack. Frames
        stacked together must have one shape (from the index, before any read)."""
        count = len(self)
        if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
            return [frame_index(self.dataset, int(index))], 0
        if isinstance(index, slice):
            frames, relative = list(range(*index.indices(count))), slice(None)
        else:
            covering, chosen = _cover(index, count, "the frames")
            frames = sorted({covering.start + int(c) for c in np.ravel(chosen)})
            relative = np.searchsorted(frames, covering.start + chosen)
        self._one_shape({self.frame_shape(t) for t in frames})
        return frames, relative

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with its dataset (dask's process schedulers), which pickles by path: the copy reopens the file."""
        return _made_again, (self.dataset, self.field, self._read_options)


def _made_again(dataset: OpenContainer, field: str, read_options: dict[str, Any]) -> FieldArray:
    return FieldArray(dataset, field, **read_options)


def _read_arguments(read_options: dict[str, Any]) -> dict[str, Any]:
    """Read options as :meth:`headrace.Dataset.read` takes them, as :func:`headrace.arrays.read` takes them:
    its own keywords by name, the rest as the backend's options."""
    named = {name: value for name, value in read_options.items() if name in ("stored_order", "backend", "verify")}
    return {**named, "backend_options": {name: value for name, value in read_options.items() if name not in named}}


def to_dask(dataset: OpenContainer, field: str | None = None, **read_options: Any) -> Any:
    """A dask array over :class:`FieldArray`: one chunk per frame; each frame read when computed."""
    dask_array = _optional("dask.array", "Dataset.to_dask")
    tokenize = _optional("dask.base", "Dataset.to_dask").tokenize
    array = FieldArray(dataset, field, **read_options)
    shape = array.shape
    stat = os.stat(dataset.path)
    name = f"headrace-{array.field}-" + tokenize(dataset.path, stat.st_size, stat.st_mtime_ns, array.field, read_options)
    return dask_array.from_array(array, chunks=(1, *shape[1:]), name=name, lock=False, asarray=False,
                                 meta=np.empty((0,) * len(shape), array.dtype))


def _dims(dataset: OpenContainer, fields: Sequence[str], stored_order: bool) -> dict[str, tuple[str, ...]]:
    """Each field's dimension names: time, then z, y, x (and component) of a grid or element, component.
    ``component`` and ``element`` are shared when every field that has the axis agrees on its size, and
    prefixed with the field's name otherwise."""
    shapes = {name: field_shape(dataset, 0, name, stored_order=stored_order) for name in fields}
    axes: dict[str, list[str]] = {}
    for name, shape in shapes.items():
        grid = len(region_axes(dataset, 0, name, stored_order=stored_order)) == 3
        axes[name] = ["z", "y", "x"] if grid else ["element"]
        if len(shape) > len(axes[name]):
            axes[name].append("component")
    for shared in ("element", "component"):
        sizes = {shapes[name][axes[name].index(shared)] for name in fields if shared in axes[name]}
        if len(sizes) > 1:
            for name in fields:
                if shared in axes[name]:
                    axes[name][axes[name].index(shared)] = f"{name}_{shared}"
    return {name: ("time", *axes[name]) for name in fields}


def _frame_times(dataset: OpenContainer) -> np.ndarray:
    """The frames' times: datetime64 when the file says they are ``seconds since <date>`` (the
    ``time_units`` a NetCDF or zarr conversion of dates writes), else the stored numbers."""
    seconds = np.array([f.time for f in dataset.frames])
    units = str(dataset.attributes.get("time_units", ""))
    prefix = "seconds since "
    if units.startswith(prefix):
        try:
            epoch = np.datetime64(units[len(prefix):].strip().replace(" ", "T"), "ns")
        except ValueError:
            return seconds
        return epoch + np.round(seconds * 1e9).astype("timedelta64[ns]")
    return seconds


def to_xarray(dataset: OpenContainer, fields: Sequence[str] | None = None, **read_options: Any) -> Any:
    """An xarray Dataset with one variable per field (each a :func:`to_dask` array), coordinates ``time``
    (the frames' times; datetime64 when the file's ``time_units`` is ``seconds since <date>``), ``frame`` (their indices) and, for a grid, ``x``, ``y``, ``z`` from
    ``grid_origin`` and ``grid_spacing``; the container's attributes as its attrs."""
    xarray = _optional("xarray", "Dataset.to_xarray")
    names = list(fields) if fields is not None else [f.name for f in dataset.fields]
    if not dataset.frames:
        raise UsageError(f"{dataset.path}: no frames to make an xarray Dataset of")
    dims = _dims(dataset, names, bool(read_options.get("stored_order", False)))
    variables = {name: (dims[name], to_dask(dataset, name, **read_options)) for name in names}
    coords: dict[str, Any] = {"time": ("time", _frame_times(dataset)),
                              "frame": ("time", np.arange(len(dataset.frames)))}
    layout = dataset.grid_layout
    used = {dim for field_dims in dims.values() for dim in field_dims}
    if layout is not None and {"z", "y", "x"} <= used:
        origin = dataset.attributes.get("grid_origin", [0.0, 0.0, 0.0])
        spacing = dataset.attributes.get("grid_spacing", [1.0, 1.0, 1.0])
        for axis, name in enumerate(("x", "y", "z")):
            coords[name] = (name, origin[axis] + spacing[axis] * np.arange(layout.dims[axis]))
    return xarray.Dataset(variables, coords=coords, attrs=dict(dataset.attributes))
