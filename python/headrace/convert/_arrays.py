"""What the readers of array libraries (HDF5, NetCDF, zarr) share: dtype and shape rules, slabs, grids.

Each of them hands over an array per frame that a library reads a selection of at a time. The array is
cut into slabs, runs of whole rows in C order of about :data:`SLICE_BYTES`, so a frame larger than
memory converts; the slabs follow the array's chunks where one fits, so a chunk is decoded once.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from headrace import errors
from headrace.convert.source import STORABLE_DTYPES, AttributeValue, BBox, ConversionNote, Piece

__all__ = ["SLICE_BYTES", "Selection", "FrameShape", "ArrayLayout", "bad_dataset", "stored_dtype", "frame_shape",
           "array_layout", "resolve_layouts", "is_time_name", "slabs", "array_pieces", "grid_attributes", "frame_stem"]

# Bytes of values read and written at a time (bounds the memory a frame needs).
SLICE_BYTES = 32 << 20

# Lossless widenings for element types a container cannot hold as they are.
_WIDENED: dict[np.dtype, np.dtype] = {np.dtype("float16"): np.dtype("float32"), np.dtype("bool"): np.dtype("uint8")}

Selection = tuple[object, ...]


def bad_dataset(kind: type[Exception], path: os.PathLike | str, dataset: str, expected: str, found: str) -> Exception:
    """A bad-data error naming a dataset (or variable, or array) where others name an offset."""
    return kind(f"{path}: {dataset}: expected {expected}, found {found}")


def stored_dtype(dtype: np.dtype, path: os.PathLike | str, dataset: str) -> np.dtype:
    """The container's element type for values of ``dtype``: itself in native byte order, float32 for
    float16, uint8 for bool; any other type is a ``BadDataError`` naming ``dataset``."""
    dtype = np.dtype(dtype)
    if dtype.kind in "biuf" and dtype.fields is None and dtype.subdtype is None:
        native = np.dtype(dtype.newbyteorder("=").name)
        native = _WIDENED.get(native, native)
        if native in STORABLE_DTYPES:
            return native
    names = ", ".join(d.name for d in STORABLE_DTYPES)
    raise bad_dataset(errors.BadDataError, path, dataset,
                      f"numbers a container holds ({names}; float16 and bool are widened)", f"dtype {dtype}")


@dataclass(frozen=True)
class FrameShape:
    """How one frame's array becomes a field: element axes, components per element, and the grid
    ``(Z, Y, X)`` when the array is one (``None`` for a list of elements)."""

    element_axes: tuple[int, ...]
    components: int
    grid: tuple[int, int, int] | None

    @property
    def elements(self) -> int:
        return math.prod(self.element_axes)


def frame_shape(shape: Sequence[int], path: os.PathLike | str, dataset: str) -> FrameShape:
    """The npy reader's rule: ``(n,)`` and ``(n, c)`` are n elements of 1 or c components, ``(Z, Y, X)``
    and ``(Z, Y, X, c)`` grids (x fastest); anything else is a ``BadDataError``."""
    shape = tuple(int(n) for n in shape)
    if len(shape) == 1:
        return FrameShape(shape, 1, None)
    if len(shape) == 2:
        return FrameShape(shape[:1], shape[1], None)
    if len(shape) in (3, 4):
        if 0 in shape:
            raise bad_dataset(errors.EmptyFieldError, path, dataset, "a grid of at least one point", f"shape {shape}")
        grid = (shape[0], shape[1], shape[2])
        return FrameShape(grid, shape[3] if len(shape) == 4 else 1, grid)
    raise bad_dataset(errors.BadDataError, path, dataset, "a frame of shape (n,), (n, c), (Z, Y, X) or (Z, Y, X, c)",
                      f"shape {shape}")


# Names of an axis that holds time (any case): HDF5 dimension labels and scales, zarr dimension names.
TIME_NAMES = ("time", "t")
# Last-axis lengths that may be components per grid point (scalars, 2-D and 3-D vectors, RGBA).
PLAUSIBLE_COMPONENTS = range(1, 5)


def is_time_name(name: str | None) -> bool:
    """Whether an axis named ``name`` holds time: ``time`` or ``t``, any case."""
    return name is not None and name.strip().lower() in TIME_NAMES


@dataclass(frozen=True)
class ArrayLayout:
    """Where time is in an array and what one frame of it is: ``time_axis`` (``None``: the array is one
    frame), the ``steps`` it holds along it and each frame's :class:`FrameShape`."""

    time_axis: int | None
    steps: int
    frame: FrameShape

    def select(self, step: int | None, selection: Selection, ndim: int) -> Selection:
        """``selection`` of the frame at ``step`` as a selection of the whole array of ``ndim`` axes."""
        full: list[object] = list(selection) + [slice(None)] * (ndim - (self.time_axis is not None) - len(selection))
        if self.time_axis is not None:
            full.insert(self.time_axis, step)
        return tuple(full)

    def frame_chunks(self, chunks: Sequence[int] | None) -> tuple[int, ...] | None:
        """The array's chunk extents along a frame's element axes."""
        if not chunks:
            return None
        rest = [int(c) for axis, c in enumerate(chunks) if axis != self.time_axis]
        return tuple(rest[: len(self.frame.element_axes)])


class _Ambiguous(Exception):
    """A 4-D shape that is a grid of c components or a time series of grids; nothing says which."""


def _time_axis_of(shape: tuple[int, ...], names: Sequence[str | None] | None,
                  components: int | None) -> int | None:
    """The shape rule (docs/converters.md, "Time in arrays"); raises :class:`_Ambiguous`."""
    if names is not None and len(names) == len(shape):
        named = [axis for axis, name in enumerate(names) if is_time_name(name)]
        if len(named) == 1:
            return named[0]
        if not named and all(names):
            return None  # every axis named, none of them time: one frame
    if len(shape) == 5:
        return 0
    if len(shape) != 4:
        return None
    if components is not None:
        return None if shape[3] == components else 0
    if shape[3] in PLAUSIBLE_COMPONENTS:
        raise _Ambiguous()
    return 0


def array_layout(shape: Sequence[int], path: os.PathLike | str, label: str, *, time_axis: int | None = None,
                 components: int | None = None, names: Sequence[str | None] | None = None) -> ArrayLayout:
    """How an array of ``shape`` becomes frames (docs/converters.md, "Time in arrays").

    ``time_axis`` (``--time-axis``) names the axis of time; else an axis named ``time`` or ``t`` in
    ``names`` is time, and every axis named without one means no time; else by rank: up to 3 axes are
    one frame (``(n,)``, ``(n, c)``, ``(Z, Y, X)``), 5 are ``(t, Z, Y, X, c)``, and 4 are ``(t, Z, Y, X)``
    unless the last axis may be components (1 to 4), which ``components`` (``--components``) settles:
    ``(Z, Y, X, c)`` when it equals the last axis. Each frame follows :func:`frame_shape`. Raises
    ``UsageError`` for an ambiguous shape or a bad ``time_axis``, ``BadDataError`` for a frame of no
    shape headrace stores, or components other than ``components``.
    """
    shape = tuple(int(n) for n in shape)
    if time_axis is not None:
        if not 0 <= time_axis < len(shape):
            raise errors.UsageError(f"{_where(path, label)}: --time-axis {time_axis}: expected an axis of its shape "
                                    f"{shape} (0 to {len(shape) - 1})")
        axis: int | None = time_axis
    else:
        try:
            axis = _time_axis_of(shape, names, components)
        except _Ambiguous:
            raise errors.UsageError(ambiguous_text(shape, path, label)) from None
    frame = shape if axis is None else shape[:axis] + shape[axis + 1:]
    steps = 1 if axis is None else shape[axis]
    layout = ArrayLayout(axis, steps, frame_shape(frame, path, label))
    if components is not None and len(frame) in (2, 4) and layout.frame.components != components:
        raise bad_dataset(errors.BadDataError, path, label, f"{components} components (--components) on its last "
                          "axis", f"shape {shape}" + (f" with time on axis {axis}" if axis is not None else ""))
    return layout


def _where(path: os.PathLike | str, label: str) -> str:
    """``<file>: <array>``, or the label alone where it names the file itself (an ``.npy``, an ``.npz`` member)."""
    return label if label.startswith(os.fspath(path)) else f"{os.fspath(path)}: {label}"


def ambiguous_text(shape: tuple[int, ...], path: os.PathLike | str, label: str) -> str:
    """The error for a 4-D shape that may be either; it names both readings and the option of each."""
    z, y, x, c = shape
    return (f"{_where(path, label)}: shape {shape} is either a {x} x {y} x {z} grid of {c} components "
            f"(Z, Y, X, c) or {z} frames of a {c} x {x} x {y} grid (t, Z, Y, X): pass --components {c} for the "
            "first, --time-axis 0 for the second")


def resolve_layouts(shapes: Mapping[str, Sequence[int]], path: os.PathLike | str, *, time_axis: int | None = None,
                    components: int | None = None, names: Mapping[str, Sequence[str | None] | None] | None = None,
                    say: bool = True) -> dict[str, ArrayLayout]:
    """:func:`array_layout` of arrays converted together (keyed by label): an ambiguous 4-D array is
    settled by another one's grid (``(Z, Y, X)`` equal to its first three axes: components; to its last
    three: time), else the ambiguity is the error. With ``say``, a 4-D array the shape rule alone made a
    time series is said once (a :class:`ConversionNote` naming ``--components``)."""
    layouts: dict[str, ArrayLayout] = {}
    pending: list[str] = []
    for label, shape in shapes.items():
        axis_names = names.get(label) if names else None
        try:
            if time_axis is None and components is None:
                _time_axis_of(tuple(int(n) for n in shape), axis_names, None)
        except _Ambiguous:
            pending.append(label)
            continue
        layouts[label] = array_layout(shape, path, label, time_axis=time_axis, components=components, names=axis_names)
    grids = {layout.frame.grid for layout in layouts.values() if layout.frame.grid is not None}
    for label in pending:
        shape = tuple(int(n) for n in shapes[label])
        if shape[:3] in grids:
            layouts[label] = array_layout(shape, path, label, components=shape[3])
        elif shape[1:] in grids:
            layouts[label] = array_layout(shape, path, label, time_axis=0)
        else:
            raise errors.UsageError(ambiguous_text(shape, path, label))
    by_rule = [label for label in shapes if label not in pending and len(shapes[label]) == 4
               and layouts[label].time_axis == 0 and time_axis is None and components is None
               and not any(is_time_name(name) for name in (names or {}).get(label) or ())]
    if say and by_rule:
        z, y, x, c = (int(n) for n in shapes[by_rule[0]])
        warnings.warn(ConversionNote(f"{_where(path, by_rule[0])}: shape {(z, y, x, c)} read as {z} frames of a "
                                     f"{c} x {x} x {y} grid (t, Z, Y, X); --components {c} reads it as one grid of "
                                     f"{c} components"), stacklevel=5)
    return {label: layouts[label] for label in shapes}


def slabs(shape: Sequence[int], element_bytes: int, chunks: Sequence[int] | None = None) -> Iterator[Selection]:
    """Selections that cut an array of ``shape`` (elements of ``element_bytes``) into runs of whole
    rows in C order, each about :data:`SLICE_BYTES` (at least one element), in order.

    The slab axis is the first one whose rows fit the budget: axes before it are taken one index at a
    time, axes after it whole. Along the slab axis a slab is a whole number of ``chunks`` when that fits.
    """
    budget = SLICE_BYTES
    if not shape or math.prod(shape) == 0:
        return
    axis = len(shape) - 1
    for candidate in range(len(shape)):
        if math.prod(shape[candidate + 1:]) * element_bytes <= budget:
            axis = candidate
            break
    row_bytes = math.prod(shape[axis + 1:]) * element_bytes
    step = max(1, budget // row_bytes)
    if chunks is not None and step >= chunks[axis]:
        step -= step % chunks[axis]
    for outer in np.ndindex(*shape[:axis]):
        for start in range(0, shape[axis], step):
            yield (*outer, slice(start, min(start + step, shape[axis])))


def array_pieces(field: str, shape: FrameShape, dtype: np.dtype, read: Callable[[Selection], np.ndarray],
                 chunks: Sequence[int] | None = None) -> Iterator[Piece]:
    """One frame of ``field`` as ``(elements, components)`` pieces of ``dtype``, each read by
    ``read(selection)``; a frame without elements is one empty piece (an empty frame)."""
    element_bytes = shape.components * dtype.itemsize
    for selection in slabs(shape.element_axes, element_bytes, chunks):
        part = np.ascontiguousarray(read(selection), dtype=dtype).reshape(-1, shape.components)
        yield Piece(field, part, part.nbytes)
    if shape.elements == 0:
        yield Piece(field, np.empty((0, shape.components), dtype), 0)


def grid_attributes(grid: tuple[int, int, int], origin: Sequence[float] = (0.0, 0.0, 0.0),
                    spacing: Sequence[float] = (1.0, 1.0, 1.0)) -> tuple[dict[str, AttributeValue], BBox]:
    """The BOV and npy readers' grid attributes for a ``(Z, Y, X)`` grid (``origin`` and ``spacing`` in
    x, y, z order), and the frames' bounding box: origin to origin + (dims - 1) * spacing."""
    dims = [grid[2], grid[1], grid[0]]
    attributes: dict[str, AttributeValue] = {
        "grid_dims": dims, "grid_origin": [float(v) for v in origin], "grid_spacing": [float(v) for v in spacing],
        "layout": "linear",
    }
    low = tuple(float(o) for o in origin)
    high = tuple(float(o + (d - 1) * s) for o, d, s in zip(origin, dims, spacing))
    return attributes, (low, high)  # type: ignore[return-value]


def frame_stem(name: str) -> str:
    """``density_0007`` -> ``density`` (the npy reader's rule); a name that is only a number is ``data``."""
    return re.sub(r"[\s._-]*\d+$", "", name) or "data"
