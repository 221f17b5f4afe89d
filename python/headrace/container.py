"""An open container file: its index, read once, and the readers kept open on it.

:class:`OpenContainer` is what every read of a ``.hrc`` file shares: the native index (fields, frames,
attributes, the chunk table), the stored order of its grid, and the host backends and chunk readers
opened on the file. :class:`headrace.Dataset` is one; :mod:`headrace.arrays` and :mod:`headrace.lazy`
read through it.
"""

from __future__ import annotations

import builtins
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from headrace import _ext
from headrace.grid_layouts import GridLayout, grid_layout_of
from headrace.queue import Queue
from headrace.settings import io_settings

__all__ = ["ChunkReader", "Field", "Frame", "OpenContainer", "open_container"]


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


class OpenContainer:
    """A container file opened: its index (``fields``, ``frames``, ``attributes``, the chunk table) read
    and validated once, and the backends and chunk readers opened on it kept until :meth:`close`."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._container = open_container(self.path)
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

    def field(self, name: str) -> Field:
        """The description of field ``name`` (an UnknownNameError, a KeyError, names the fields there are)."""
        return self.fields[self._container.field_index(name)]

    @cached_property
    def chunk_columns(self) -> dict[str, Any]:
        """The chunk table, made once (the index never changes)."""
        return self._container.chunk_table()

    @cached_property
    def grid_layout(self) -> GridLayout | None:
        """The stored order of the grid the attributes describe; None without ``grid_dims``."""
        return grid_layout_of(self.attributes, self.path)

    def chunk_reader(self, kind: str, options: dict[str, Any]) -> ChunkReader:
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

    def close(self) -> None:
        """Closes the backends and chunk readers opened on the file (the index needs no file handle)."""
        self._backends.clear()
        for reader in self._chunk_readers.values():
            reader.close()
        self._chunk_readers.clear()


class ChunkReader:
    """A host queue on one container's file: reads chunks, checksums verified, decoded, into NumPy arrays.
    One read at a time (a lock), so threads (dask's) may share it."""

    def __init__(self, path: str, backend: str, options: dict[str, Any]) -> None:
        self._queue = Queue(backend=backend, pin_files="off", **options)  # host destinations: nothing to pin
        self._file = self._queue.add_file(path)
        self._lock = threading.Lock()

    def read(self, table: dict[str, Any], chunks: Sequence[int], destinations: Sequence[np.ndarray], verify: bool) -> None:
        with self._lock:
            requests = [
                self._queue.enqueue(self._file, int(table["offset"][chunk]), int(table["stored_size"][chunk]), destination,
                                    codec=table["codec"][chunk],
                                    checksum=int(table["checksum"][chunk]) if verify else None)
                for chunk, destination in zip(chunks, destinations)
            ]
            self._queue.submit()
            self._queue.drain()  # also lets go of the destinations it kept alive
            self._queue.summarize(requests).raise_first_failure()

    def close(self) -> None:
        self._queue.close()


_MAGIC = b"HEADRACE"  # a container's first bytes (docs/format.md, the superblock)


def open_container(path: str) -> _ext.Container:
    """The native container; a file or folder of another format is an error saying how to convert it."""
    convert = (f"if it holds data of another format (HDF5, NetCDF, zarr, VTK, .npy, raw, MMPLD, AMReX), convert it "
               f"first: headrace convert {path} {os.path.splitext(os.path.basename(path.rstrip('/')))[0]}.hrc")
    if os.path.isdir(path):
        raise _ext.NotAFileError(f"{path}: a folder, not a headrace container (one .hrc file); {convert}")
    try:
        with builtins.open(path, "rb") as handle:
            start = handle.read(len(_MAGIC))
    except OSError:
        start = _MAGIC  # the native open says what is wrong with it
    if start != _MAGIC:
        raise _ext.BadMagicError(f"{path}: offset 0: expected magic {_MAGIC.decode()!r}, found {start!r}: not a headrace "
                                 f"container; {convert}")
    return _ext.Container.open(path)
