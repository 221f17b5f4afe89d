"""Reading ``.hrc`` containers: :func:`open` returns a :class:`Dataset`.

:meth:`Dataset.read` returns a field in its natural shape: a grid's ``(z, y, x)`` or ``(z, y, x, c)``
whatever its layout on disk, other fields' elements ``(n, c)``; a ``region`` reads only the chunks it
needs, ``out=`` fills a given array, ``stored_order=True`` gives the elements as stored, and frames
count from the end when negative. :meth:`Dataset.array`, :meth:`Dataset.to_dask` and
:meth:`Dataset.to_xarray` open fields as lazy arrays. docs/arrays.md says it all.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from headrace import _ext
from headrace.arrays import ChunkReader, Region, field_shape, frame_index, read
from headrace.grid_layouts import GridLayout, grid_layout_of
from headrace.settings import io_settings

if TYPE_CHECKING:
    from headrace.lazy import FieldArray

__all__ = ["Dataset", "Field", "Frame", "open"]


@dataclass(frozen=True)
class Field:
    """A named field: ``components`` values of ``dtype`` per element."""

    name: str
    dtype: str
    components: int


@dataclass(frozen=True)
class Frame:
    """A time step: its time and bounding box ((xmin, ymin, zmin), (xmax, ymax, zmax)); NaN = unknown."""

    index: int
    time: float
    bbox: tuple[tuple[float, float, float], tuple[float, float, float]]


def _point(xyz: Sequence[float]) -> tuple[float, float, float]:
    x, y, z = xyz
    return x, y, z


class Dataset:
    """An open container: the index was read once at open; data is read through a host I/O backend."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._container = _ext.Container.open(self.path)
        self.fields = [Field(f.name, f.dtype, int(f.components)) for f in self._container.fields]
        self.frames = [
            Frame(i, f.time, (_point(f.bbox[0]), _point(f.bbox[1]))) for i, f in enumerate(self._container.frames)
        ]
        self.attributes: dict[str, Any] = dict(self._container.attributes)
        self._backends: dict[tuple, Any] = {}
        self._chunk_readers: dict[tuple, ChunkReader] = {}

    @property
    def container(self) -> _ext.Container:
        """The native container (index, chunk table, value ranges)."""
        return self._container

    @property
    def codecs(self) -> list[str]:
        """The codecs of the file's chunks, sorted and each once (["none"] for an uncompressed file)."""
        return sorted(set(self._container.chunk_table()["codec"]))

    @property
    def file_size(self) -> int:
        return self._container.file_size

    @property
    def stored_bytes(self) -> int:
        return self._container.stored_bytes

    @property
    def raw_bytes(self) -> int:
        return self._container.raw_bytes

    def field(self, name: str) -> Field:
        return self.fields[self._container.field_index(name)]

    def element_count(self, frame: int, field: str) -> int:
        return self._container.frame_field(frame_index(self, frame), self._container.field_index(field))[0]

    @cached_property
    def _chunk_columns(self) -> dict[str, Any]:
        """The chunk table, made once (the index never changes)."""
        return self._container.chunk_table()

    @cached_property
    def _grid_layout(self) -> GridLayout | None:
        """The stored order of the grid the attributes describe; None without ``grid_dims``."""
        return grid_layout_of(self.attributes, self.path)

    def _chunk_reader(self, kind: str, options: dict[str, Any]) -> ChunkReader:
        """The chunk reader (a host queue) for backend ``kind`` with ``options``, kept open like backends."""
        key = (kind, tuple(sorted(options.items())))
        if key not in self._chunk_readers:
            self._chunk_readers[key] = ChunkReader(self.path, kind, options)
        return self._chunk_readers[key]

    def backend(self, kind: str = "posix", **options: Any) -> Any:
        """The backend ``kind`` opened on this file with ``options`` (kept open: ``ram`` preloads)."""
        key = (kind, tuple(sorted(options.items())))
        if key not in self._backends:
            self._backends[key] = _ext.open_backend(kind, self.path, io_settings(**options))
        return self._backends[key]

    def read(self, frame: int, field: str | None = None, *, region: Region | None = None, out: np.ndarray | None = None,
             stored_order: bool = False, backend: str = "posix", verify: bool = True, **backend_options: Any) -> np.ndarray:
        """Field ``field`` (default: the first) of ``frame`` (negative: from the end) in its natural shape:
        ``(z, y, x)`` or ``(z, y, x, c)`` for a grid in any layout, ``(n, c)`` for other fields.

        ``region``: a box of a grid (``(slice(z0, z1), slice(y0, y1), slice(x0, x1))``, leading axes
        first; an integer drops its axis) or a range of elements (``slice(a, b)``); only the chunks
        holding part of it are read. ``out``: a C-contiguous array of the result's shape and dtype to
        fill and return. ``stored_order=True``: every field as ``(n, c)`` elements in stored order.
        docs/arrays.md has the rules."""
        return read(self, frame, field, region=region, out=out, stored_order=stored_order, backend=backend,
                    verify=verify, backend_options=backend_options)

    def shape(self, frame: int, field: str | None = None, *, region: Region | None = None,
              stored_order: bool = False) -> tuple[int, ...]:
        """The shape :meth:`read` returns for these arguments, from the index alone."""
        return field_shape(self, frame, field, region=region, stored_order=stored_order)

    def array(self, field: str | None = None, **read_options: Any) -> FieldArray:
        """Field ``field`` of every frame as a lazy NumPy-style array, ``(frames, *shape)``:
        ``ds.array("density")[-1, 10:20]`` reads z planes 10 to 19 of the last frame and nothing else."""
        from headrace.lazy import FieldArray

        return FieldArray(self, field, **read_options)

    def to_dask(self, field: str | None = None, **read_options: Any) -> Any:
        """Field ``field`` as a dask array over frames (a chunk per frame, read when computed); needs dask."""
        from headrace.lazy import to_dask

        return to_dask(self, field, **read_options)

    def to_xarray(self, fields: Sequence[str] | None = None, **read_options: Any) -> Any:
        """The fields (default: all) as a lazy xarray Dataset over a ``time`` dimension; needs xarray and dask."""
        from headrace.lazy import to_xarray

        return to_xarray(self, fields, **read_options)

    def stream(self, fields: list[str] | None = None, *, device: int | str | None = None, prefetch: int = 3,
               **options: Any) -> Any:
        """A :class:`headrace.FrameStream` playing this dataset's frames into GPU ``device`` (or ``"cpu"``)."""
        from headrace.stream import FrameStream

        return FrameStream(self, fields=fields, device=device, prefetch=prefetch, **options)

    def volume(self, field: str | None = None, **options: Any) -> Any:
        """A :class:`headrace.volume.VolumeRenderer` of a grid or AMR field of this file (options as there)."""
        from headrace.volume import VolumeRenderer

        return VolumeRenderer(self, field=field, **options)

    def close(self) -> None:
        """Closes the backends and chunk readers opened by :meth:`read` (the index needs no file handle)."""
        self._backends.clear()
        for reader in self._chunk_readers.values():
            reader.close()
        self._chunk_readers.clear()

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        fields = ", ".join(f"{f.name}:{f.dtype}x{f.components}" for f in self.fields)
        return f"Dataset({self.path!r}, frames={len(self.frames)}, fields=[{fields}])"


def open(path: str | os.PathLike[str]) -> Dataset:  # noqa: A001  (headrace.open, like zarr.open)
    """Opens a container, reading and validating its superblock and index."""
    return Dataset(path)
