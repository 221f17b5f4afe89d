"""Fields read as arrays in their natural shape: what :meth:`headrace.Dataset.read` does (docs/arrays.md).

A grid field (the container has ``grid_dims`` and the frame holds the elements its layout stores for
that grid) reads as ``(Z, Y, X)`` when it has one component and ``(Z, Y, X, C)`` otherwise, whatever its
stored layout (:mod:`headrace.grid_layouts`); any other field reads as ``(n, C)`` elements.
``stored_order=True`` reads every field as its elements in stored order. A ``region`` (a box of a grid,
a range of elements) reads only the chunks holding some of it; ``out`` is filled instead of a new array.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from headrace import _ext, container
from headrace.container import OpenContainer
from headrace.errors import CorruptIndexError, OutOfRangeError, UsageError
from headrace.grid_layouts import GridLayout, LinearLayout

__all__ = ["Region", "field_shape", "frame_index", "grid_layout", "read", "read_chunks", "region_axes"]

# A region: one index or slice (the first axis), or a tuple of them, one per axis from the first.
Region = Union[int, slice, Sequence[Union[int, slice]]]

# Raw bytes of chunks decoded at a time when a read rearranges them (bounds the memory beyond the result).
BATCH_BYTES = 64 << 20
# Grid points whose stored positions are computed at a time when finding the chunks of a box.
SLAB_POINTS = 1 << 22
_AXES = ("z", "y", "x")


def frame_index(dataset: OpenContainer, frame: int) -> int:
    """``frame`` as an index from 0; negative indices count from the end (-1 is the last frame)."""
    count = len(dataset.frames)
    if isinstance(frame, bool) or not isinstance(frame, (int, np.integer)):
        raise UsageError(f"frame {frame!r}: expected an integer frame index")
    if not -count <= frame < count:
        span = f"0 to {count - 1}, or -{count} to -1 from the end" if count else "none to read"
        raise OutOfRangeError(f"frame {frame} out of range: {dataset.path} has {count} frames ({span})")
    return int(frame) % count


@dataclass(frozen=True)
class _Target:
    """One field of one frame as a read sees it: its chunks, and its grid layout (None: elements)."""

    dataset: OpenContainer
    frame: int
    field: int
    name: str
    dtype: np.dtype
    components: int
    elements: int
    first_chunk: int
    chunk_count: int
    layout: GridLayout | None

    @property
    def axes(self) -> tuple[int, ...]:
        """Sizes of the axes a region selects on: (Z, Y, X) of a grid, (n,) of elements."""
        if self.layout is None:
            return (self.elements,)
        nx, ny, nz = self.layout.dims
        return nz, ny, nx

    @property
    def value_shape(self) -> tuple[int, ...]:
        """The axes after them: a grid's components unless there is one; elements always keep theirs."""
        return () if self.layout is not None and self.components == 1 else (self.components,)

    def chunk_firsts(self) -> np.ndarray:
        table = self.dataset.chunk_columns
        return table["first_element"][self.first_chunk : self.first_chunk + self.chunk_count].astype(np.int64)


def _target(dataset: OpenContainer, frame: int, field: str | None, stored_order: bool) -> _Target:
    t = frame_index(dataset, frame)
    name = field if field is not None else dataset.fields[0].name
    index = dataset.container.field_index(name)
    info = dataset.fields[index]
    elements, first_chunk, chunk_count = dataset.container.frame_field(t, index)
    layout = None if stored_order else _grid_of(dataset, t, name, elements)
    return _Target(dataset, t, index, name, np.dtype(info.dtype), info.components, elements, first_chunk,
                   chunk_count, layout)


def _grid_of(dataset: OpenContainer, frame: int, name: str, elements: int) -> GridLayout | None:
    """The layout that gives this frame's field its grid shape; None when it is to be read as elements."""
    layout = dataset.grid_layout
    if layout is None:
        return None
    if elements == layout.element_count:
        return layout
    if elements == 0 or isinstance(layout, LinearLayout):  # an empty frame, or a field not on the points
        return None
    raise CorruptIndexError(f"{dataset.path}: frame {frame} field {name!r}: expected {layout.element_count} elements "
                            f"(grid_dims {list(layout.dims)} in layout {dataset.attributes.get('layout')!r}), "
                            f"found {elements}")


@dataclass(frozen=True)
class _Box:
    """What a region selects: per axis [start, stop), and whether an integer index dropped the axis."""

    starts: tuple[int, ...]
    stops: tuple[int, ...]
    dropped: tuple[bool, ...]

    def extents(self) -> tuple[int, ...]:
        return tuple(stop - start for start, stop in zip(self.starts, self.stops))

    def shape(self) -> tuple[int, ...]:
        return tuple(n for n, dropped in zip(self.extents(), self.dropped) if not dropped)

    def covers(self, axes: tuple[int, ...]) -> bool:
        return self.starts == (0,) * len(axes) and self.stops == axes


def _box(region: Region | None, target: _Target) -> _Box:
    axes = target.axes
    names = _AXES if target.layout is not None else ("element",)
    items: Sequence[Any] = () if region is None else region if isinstance(region, (tuple, list)) else (region,)
    if len(items) > len(axes):
        raise UsageError(f"region {region!r}: expected at most {len(axes)} indices or slices ({', '.join(names)}) for "
                         f"field {target.name!r}")
    starts: list[int] = []
    stops: list[int] = []
    dropped: list[bool] = []
    for axis, (name, size) in enumerate(zip(names, axes)):
        item = items[axis] if axis < len(items) else slice(None)
        if isinstance(item, slice):
            if item.step not in (None, 1):
                raise UsageError(f"region {name} slice {item}: a region takes steps of 1 (slice the result, or index "
                                 "ds.array(field), for others)")
            start, stop, _ = item.indices(size)
            bounds, drop = (start, max(start, stop)), False
        elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            if not -size <= item < size:
                raise OutOfRangeError(f"region {name} index {item} out of range for {size} {name} points"
                                 if target.layout is not None else f"region element {item} out of range for {size} "
                                 f"elements in frame {target.frame}")
            start = int(item) % size
            bounds, drop = (start, start + 1), True
        else:
            raise UsageError(f"region {name}: expected an integer or a slice, got {item!r}")
        starts.append(bounds[0])
        stops.append(bounds[1])
        dropped.append(drop)
    return _Box(tuple(starts), tuple(stops), tuple(dropped))


def _output(out: np.ndarray | None, shape: tuple[int, ...], target: _Target) -> np.ndarray:
    if out is None:
        return np.empty(shape, dtype=target.dtype)
    if isinstance(out, np.ndarray) and out.dtype == target.dtype and out.shape == shape and out.flags.c_contiguous \
            and out.flags.writeable:
        return out
    given = (f"shape {out.shape}, dtype {out.dtype}" + ("" if out.flags.c_contiguous else ", not C-contiguous") +
             ("" if out.flags.writeable else ", read-only")) if isinstance(out, np.ndarray) else type(out).__name__
    raise UsageError(f"out= for frame {target.frame} field {target.name!r}: expected a writable C-contiguous NumPy array "
                     f"of shape {shape} and dtype {target.dtype}, got {given}")


def field_shape(dataset: OpenContainer, frame: int, field: str | None = None, *, region: Region | None = None,
                stored_order: bool = False) -> tuple[int, ...]:
    """The shape :func:`read` returns, from the index alone."""
    target = _target(dataset, frame, field, stored_order)
    return _box(region, target).shape() + target.value_shape


def grid_layout(dataset: OpenContainer, frame: int, field: str | None = None) -> GridLayout | None:
    """The layout that gives this frame's field its grid shape (the layout its elements are stored in),
    or None when the field reads as elements (no grid, another element count, an empty frame)."""
    return _target(dataset, frame, field, False).layout


def region_axes(dataset: OpenContainer, frame: int, field: str | None = None, *, stored_order: bool = False) -> tuple[int, ...]:
    """The sizes of the axes a region selects on: (Z, Y, X) of a grid, (n,) of elements; the shape
    :func:`read` returns has these, then the components unless a grid has one."""
    return _target(dataset, frame, field, stored_order).axes


def read(dataset: OpenContainer, frame: int, field: str | None = None, *, region: Region | None = None,
         out: np.ndarray | None = None, stored_order: bool = False, backend: str = "posix", verify: bool = True,
         backend_options: dict[str, Any] | None = None) -> np.ndarray:
    """Field ``field`` of ``frame`` in its natural shape; see the module docstring and docs/arrays.md."""
    target = _target(dataset, frame, field, stored_order)
    box = _box(region, target)
    result = _output(out, box.shape() + target.value_shape, target)
    values = result.reshape(-1, target.components)  # a view: the result is C-contiguous
    source = _ChunkSource(target, backend, verify, backend_options or {})
    layout = target.layout
    if layout is None:
        source.read_elements(box.starts[0], box.stops[0], values)
    elif isinstance(layout, LinearLayout) and box.covers(target.axes):
        source.read_elements(0, target.elements, values)
    elif isinstance(layout, LinearLayout) and box.starts[1:] == (0, 0) and box.stops[1:] == target.axes[1:]:
        plane = target.axes[1] * target.axes[2]  # whole z planes: one run of elements
        source.read_elements(box.starts[0] * plane, box.stops[0] * plane, values)
    else:
        source.read_box(layout, box, values)
    return result


class _ChunkSource:
    """Reads a target's chunks: all of them at once, a range of elements, or the ones a box needs."""

    def __init__(self, target: _Target, backend: str, verify: bool, options: dict[str, Any]) -> None:
        self.target, self.backend, self.verify, self.options = target, backend, verify, options

    def _read(self, chunks: Sequence[int], destinations: Sequence[np.ndarray]) -> None:
        absolute = [self.target.first_chunk + chunk for chunk in chunks]
        read_chunks(self.target.dataset, absolute, destinations, backend=self.backend, verify=self.verify,
                    **self.options)

    def read_elements(self, start: int, stop: int, values: np.ndarray) -> None:
        """Elements ``start .. stop - 1`` into ``values`` ((stop - start, components))."""
        target = self.target
        if start == stop:
            return
        if start == 0 and stop == target.elements:  # the whole field: one call, every chunk at once
            backend = target.dataset.backend(self.backend, **self.options)
            _ext.read_field(target.dataset.container, backend, target.frame, target.field, values.reshape(-1).view(np.uint8),
                            self.verify)
            return
        firsts = self.chunk_firsts_with_end()
        first, last = int(np.searchsorted(firsts, start, "right")) - 1, int(np.searchsorted(firsts, stop, "left"))
        chunks, destinations, partial = [], [], []
        for chunk in range(first, last):
            lo, hi = int(firsts[chunk]), int(firsts[chunk + 1])
            if start <= lo and hi <= stop:  # whole: straight into the result
                destinations.append(values[lo - start : hi - start])
            else:
                destinations.append(np.empty((hi - lo, target.components), target.dtype))
                partial.append((destinations[-1], lo, hi))
            chunks.append(chunk)
        self._read(chunks, destinations)
        for chunk_values, lo, hi in partial:
            a, b = max(lo, start), min(hi, stop)
            values[a - start : b - start] = chunk_values[a - lo : b - lo]

    def chunk_firsts_with_end(self) -> np.ndarray:
        """Each chunk's first element, then the element count: chunk ``k`` holds ``[f[k], f[k + 1])``."""
        return np.append(self.target.chunk_firsts(), self.target.elements)

    def chunks_in_box(self, layout: GridLayout, box: _Box) -> list[int]:
        """The chunks holding a point of ``box``: positions computed a slab of z planes at a time."""
        firsts = self.target.chunk_firsts()
        (z0, y0, x0), (z1, y1, x1) = box.starts, box.stops
        planes = max(1, SLAB_POINTS // max(1, (y1 - y0) * (x1 - x0)))
        y = np.arange(y0, y1)[None, :, None]
        x = np.arange(x0, x1)[None, None, :]
        needed: set[int] = set()
        for slab in range(z0, z1, planes):
            z = np.arange(slab, min(z1, slab + planes))[:, None, None]
            chunks = np.searchsorted(firsts, layout.positions(z, y, x).ravel(), "right") - 1
            needed.update(int(c) for c in np.unique(chunks))
        return sorted(needed)

    def read_box(self, layout: GridLayout, box: _Box, values: np.ndarray) -> None:
        """The box's points into ``values`` ((points, components), the box's C order): chunks decoded a
        batch at a time, each point put in place by the layout's map."""
        target = self.target
        whole = box.covers(target.axes)
        padded = layout.element_count > target.axes[0] * target.axes[1] * target.axes[2]
        chunks = list(range(target.chunk_count)) if whole else self.chunks_in_box(layout, box)
        firsts = self.chunk_firsts_with_end()
        (z0, y0, x0), (z1, y1, x1) = box.starts, box.stops
        element_bytes = target.components * target.dtype.itemsize
        for batch in _batches(chunks, firsts, element_bytes):
            buffers = [np.empty((int(firsts[c + 1] - firsts[c]), target.components), target.dtype) for c in batch]
            self._read(batch, buffers)
            for chunk, chunk_values in zip(batch, buffers):
                z, y, x = layout.points(int(firsts[chunk]), int(firsts[chunk + 1]))
                if padded or not whole:
                    inside = (z0 <= z) & (z < z1) & (y0 <= y) & (y < y1) & (x0 <= x) & (x < x1)
                    z, y, x, chunk_values = z[inside], y[inside], x[inside], chunk_values[inside]
                _rows(values)[((z - z0) * (y1 - y0) + (y - y0)) * (x1 - x0) + (x - x0)] = _rows(chunk_values)


def _rows(values: np.ndarray) -> np.ndarray:
    """A C-contiguous (n, components) array as n opaque elements: one move per element when scattering."""
    return values.view(np.dtype((np.void, values.shape[1] * values.itemsize))).reshape(-1)


def _batches(chunks: list[int], firsts: np.ndarray, element_bytes: int) -> Iterator[list[int]]:
    """``chunks`` in runs of at most :data:`BATCH_BYTES` raw bytes (at least one chunk each)."""
    batch: list[int] = []
    size = 0
    for chunk in chunks:
        chunk_bytes = int(firsts[chunk + 1] - firsts[chunk]) * element_bytes
        if batch and size + chunk_bytes > BATCH_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(chunk)
        size += chunk_bytes
    if batch:
        yield batch


def read_chunks(dataset: OpenContainer, chunks: Sequence[int], destinations: Sequence[np.ndarray], *, backend: str = "posix",
                verify: bool = True, **options: Any) -> None:
    """Reads chunks ``chunks`` (indices into the container's chunk table) of ``dataset``, each into its
    destination (a C-contiguous array of the chunk's raw size), through the dataset's chunk reader for
    ``backend`` and ``options``. Every partial read goes through here (tests count its chunks)."""
    if chunks:
        dataset.chunk_reader(backend, options).read(dataset.chunk_columns, chunks, destinations, verify)


def __getattr__(name: str) -> Any:
    if name == "ChunkReader":  # moved in issue 36
        warnings.warn("headrace.arrays.ChunkReader moved to headrace.container.ChunkReader", DeprecationWarning,
                      stacklevel=2)
        return container.ChunkReader
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
