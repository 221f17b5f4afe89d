"""Reading ``.hrc`` containers: :func:`open` returns a :class:`Dataset`.

:meth:`Dataset.read` returns a field in its natural shape: a grid's ``(z, y, x)`` or ``(z, y, x, c)``
whatever its layout on disk, other fields' elements ``(n, c)``; a ``region`` reads only the chunks it
needs, ``out=`` fills a given array, ``stored_order=True`` gives the elements as stored, and frames
count from the end when negative. :meth:`Dataset.array`, :meth:`Dataset.to_dask` and
:meth:`Dataset.to_xarray` open fields as lazy arrays. docs/arrays.md says it all.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterator, Mapping, Sequence
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
    from headrace.stream import FrameStream
    from headrace.volume import VolumeRenderer

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


class Dataset(Mapping[str, "FieldArray"]):
    """An open container: the index was read once at open; data is read through a host I/O backend.

    A read-only mapping of field names to lazy arrays over every frame, as h5py, zarr and xarray users
    expect: ``ds["density"]`` is ``ds.array("density")`` (shape ``(frames, *natural shape)``, nothing
    read until indexed), ``"density" in ds``, ``len(ds)`` fields, ``list(ds)`` their names.
    ``ds.fields`` describes them (dtype, components), ``ds.frames`` the time steps (index, time, box),
    ``ds.attributes`` the file's metadata (``grid_dims``, ``layout``, units, ...).

    Reading: :meth:`read` (one frame of a field, NumPy, natural shape), :meth:`array` (lazy, over frames),
    :meth:`to_xarray` / :meth:`to_dask`, :meth:`stream` (frames into GPU or host memory, prefetched).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._container = _open_container(self.path)
        self.fields = [Field(f.name, f.dtype, int(f.components)) for f in self._container.fields]
        self.frames = [
            Frame(i, f.time, (_point(f.bbox[0]), _point(f.bbox[1]))) for i, f in enumerate(self._container.frames)
        ]
        self.attributes: dict[str, Any] = dict(self._container.attributes)
        self._backends: dict[tuple, Any] = {}
        self._chunk_readers: dict[tuple, ChunkReader] = {}

    # ---- a read-only mapping of fields ----
    def __getitem__(self, name: str) -> FieldArray:
        """Field ``name`` over every frame, lazily (:meth:`array`); a KeyError naming the fields there are."""
        if not isinstance(name, str):
            raise KeyError(f"{self.path}: fields are named by strings ({', '.join(self)}), got {name!r}; "
                           "frames are read with ds.read(frame, field) or ds[field][frame]")
        self.field(name)
        return self.array(name)

    def __iter__(self) -> Iterator[str]:
        return iter([f.name for f in self.fields])

    def __len__(self) -> int:
        return len(self.fields)

    def __contains__(self, name: object) -> bool:
        return any(f.name == name for f in self.fields)

    # A mapping compares by its items; a Dataset is an open file, equal only to itself (and hashable).
    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

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
        """The description of field ``name`` (an UnknownNameError, a KeyError, names the fields there are)."""
        return self.fields[self._container.field_index(name)]

    def element_count(self, frame: int, field: str) -> int:
        """Elements of ``field`` in ``frame`` (grid points and padding, or particles), from the index."""
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
               stored_order: bool = False, **options: Any) -> FrameStream:
        """The frames played into GPU ``device`` (an ordinal) or host memory (``"cpu"``), ``prefetch`` in flight.

        ``for frame in ds.stream(device=0): x = cupy.from_dlpack(frame["density"])``: each field of a
        frame is a :class:`headrace.stream.FieldArray` (DLPack, CUDA array interface, NumPy) in
        :meth:`read`'s natural shape: a grid ``(z, y, x)`` or ``(z, y, x, c)`` whatever its layout on disk
        (a blocked or Hilbert layout is put in grid order as the frame is handed out), other fields ``(n, c)``.
        ``stored_order=True``: every field as ``(n, c)`` elements exactly as stored (padding included).
        ``options``: ``loop``, ``start``, ``frames``, ``engine`` and the I/O knobs of docs/settings.md."""
        from headrace.stream import FrameStream

        return FrameStream(self, fields=fields, device=device, prefetch=prefetch, stored_order=stored_order, **options)

    def volume(self, field: str | None = None, **options: Any) -> VolumeRenderer:
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


_MAGIC = b"HEADRACE"  # a container's first bytes (docs/format.md, the superblock)


def _open_container(path: str) -> _ext.Container:
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


def open(path: str | os.PathLike[str]) -> Dataset:  # noqa: A001  (headrace.open, like zarr.open)
    """Opens a headrace container (``.hrc``), reading and validating its superblock and index once.

    ::

        ds = headrace.open("v.hrc")
        ds.fields, ds.frames, ds.attributes       # what it holds, from the index (nothing else is read)
        last = ds.read(-1, "density")             # a frame as NumPy, natural shape (z, y, x) for a grid
        series = ds["density"]                    # every frame, lazily: series[3, 10:20] reads planes 10..19
        for frame in ds.stream(device=0): ...     # frames into GPU memory (or device="cpu"), prefetched

    Other formats (HDF5, NetCDF, zarr, VTK, .npy, raw, MMPLD, AMReX) are converted once with
    ``headrace convert SOURCE OUT.hrc``; opening one here is a BadMagicError that says so. Errors:
    a missing file is a FileNotFoundError; a damaged one a BadDataError naming the file, the offset
    and what was expected."""
    return Dataset(path)
