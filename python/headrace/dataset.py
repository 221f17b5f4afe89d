"""Reading ``.hrc`` containers: :func:`open` returns a :class:`Dataset`.

:meth:`Dataset.read` returns a field in its natural shape: a grid's ``(z, y, x)`` or ``(z, y, x, c)``
whatever its layout on disk, other fields' elements ``(n, c)``; a ``region`` reads only the chunks it
needs, ``out=`` fills a given array, ``stored_order=True`` gives the elements as stored, and frames
count from the end when negative. :meth:`Dataset.array`, :meth:`Dataset.to_dask` and
:meth:`Dataset.to_xarray` open fields as lazy arrays. docs/arrays.md says it all.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from headrace.arrays import Region, field_shape, frame_index, read
from headrace.container import Field, Frame, OpenContainer
from headrace.lazy import FieldArray, to_dask, to_xarray
from headrace.stream import FrameStream

__all__ = ["Dataset", "Field", "Frame", "open"]


class Dataset(OpenContainer, Mapping[str, FieldArray]):
    """An open container: the index was read once at open; data is read through a host I/O backend.

    A read-only mapping of field names to lazy arrays over every frame, as h5py, zarr and xarray users
    expect: ``ds["density"]`` is ``ds.array("density")`` (shape ``(frames, *natural shape)``, nothing
    read until indexed), ``"density" in ds``, ``len(ds)`` fields, ``list(ds)`` their names.
    ``ds.fields`` describes them (dtype, components), ``ds.frames`` the time steps (index, time, box),
    ``ds.attributes`` the file's metadata (``grid_dims``, ``layout``, units, ...).

    Reading: :meth:`read` (one frame of a field, NumPy, natural shape), :meth:`array` (lazy, over frames),
    :meth:`to_xarray` / :meth:`to_dask`, :meth:`stream` (frames into GPU or host memory, prefetched).
    """

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
    def codecs(self) -> list[str]:
        """The codecs of the file's chunks, sorted and each once (["none"] for an uncompressed file)."""
        return sorted(set(self._container.chunk_table()["codec"]))

    @property
    def file_size(self) -> int:
        return self._container.file_size

    @property
    def growing(self) -> bool:
        """Whether a publishing writer is still writing the file (format 1.4: ``headrace.Writer(..., publish=True)``),
        or was killed before it closed it: the frames here are those it had published when the file was opened."""
        return bool(self._container.growing)

    @property
    def stored_bytes(self) -> int:
        return self._container.stored_bytes

    @property
    def raw_bytes(self) -> int:
        return self._container.raw_bytes

    def element_count(self, frame: int, field: str) -> int:
        """Elements of ``field`` in ``frame`` (grid points and padding, or particles), from the index."""
        return self._container.frame_field(frame_index(self, frame), self._container.field_index(field))[0]

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
        return FieldArray(self, field, **read_options)

    def to_dask(self, field: str | None = None, **read_options: Any) -> Any:
        """Field ``field`` as a dask array over frames (a chunk per frame, read when computed); needs dask."""
        return to_dask(self, field, **read_options)

    def to_xarray(self, fields: Sequence[str] | None = None, **read_options: Any) -> Any:
        """The fields (default: all) as a lazy xarray Dataset over a ``time`` dimension; needs xarray and dask."""
        return to_xarray(self, fields, **read_options)

    def stream(self, fields: list[str] | None = None, *, device: int | str | None = None, prefetch: int = 3,
               stored_order: bool = False, **options: Any) -> FrameStream:
        """The frames played into GPU ``device`` (an ordinal) or host memory (``"cpu"``), ``prefetch`` in flight.

        ``for frame in ds.stream(device=0): x = cupy.from_dlpack(frame["density"])``: each field of a
        frame is a :class:`headrace.stream.FieldArray` (DLPack, CUDA array interface, NumPy) in
        :meth:`read`'s natural shape: a grid ``(z, y, x)`` or ``(z, y, x, c)`` whatever its layout on disk
        (a blocked or Hilbert layout is put in grid order as the frame is handed out), other fields ``(n, c)``.
        ``stored_order=True``: every field as ``(n, c)`` elements exactly as stored (padding included).
        ``options``: ``loop``, ``start``, ``frames``, ``engine``, ``follow`` (play frames as a publishing writer
        publishes them, format 1.4) and the I/O knobs of docs/settings.md."""
        return FrameStream(self, fields=fields, device=device, prefetch=prefetch, stored_order=stored_order, **options)

    def volume(self, field: str | None = None, **options: Any) -> Any:
        """Deprecated: ``headrace.workloads.volume.VolumeRenderer(ds, field=..., **options)``."""
        warnings.warn("Dataset.volume is deprecated: use headrace.workloads.volume.VolumeRenderer(ds, field=...)",
                      DeprecationWarning, stacklevel=2)
        # Found by name for this release only: the core imports no workload (they sit above it).
        return importlib.import_module("headrace.workloads.volume").VolumeRenderer(self, field=field, **options)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled by path (dask's process schedulers, a lazy array's copy): the copy reopens the file."""
        return open, (self.path,)

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        fields = ", ".join(f"{f.name}:{f.dtype}x{f.components}" for f in self.fields)
        return f"Dataset({self.path!r}, frames={len(self.frames)}, fields=[{fields}])"


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
