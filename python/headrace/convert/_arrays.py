"""What the readers of array libraries (HDF5, NetCDF, zarr) share: dtype and shape rules, slabs, grids.

Each of them hands over an array per frame that a library reads a selection of at a time. The array is
cut into slabs, runs of whole rows in C order of about :data:`SLICE_BYTES`, so a frame larger than
memory converts; the slabs follow the array's chunks where one fits, so a chunk is decoded once.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from headrace.convert.source import STORABLE_DTYPES, AttributeValue, BBox, Piece

__all__ = ["SLICE_BYTES", "Selection", "FrameShape", "bad_dataset", "stored_dtype", "frame_shape", "slabs",
           "array_pieces", "grid_attributes", "frame_stem"]

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
    from headrace import errors

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
    from headrace import errors

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
