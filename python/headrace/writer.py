"""Writing ``.hrc`` containers (docs/format.md) from NumPy arrays, crash-safely."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from headrace import _ext

__all__ = ["FieldSpec", "Writer", "Codec", "default_chunk_size"]

Codec = Literal["none", "lz4", "zstd", "gdeflate"]
# gdeflate chunks hold at most 64 KiB raw (nvCOMP's CPU encoder; docs/codecs/gdeflate.md).
GDEFLATE_MAX_CHUNK_BYTES = 1 << 16
DEFAULT_CHUNK_BYTES = 4 << 20


def default_chunk_size(codec: str) -> int:
    """The chunk size a writer takes when given none: 4 MiB, or 64 KiB (the most it takes) for gdeflate."""
    return GDEFLATE_MAX_CHUNK_BYTES if codec == "gdeflate" else DEFAULT_CHUNK_BYTES
BBox = tuple[Sequence[float], Sequence[float]]


@dataclass(frozen=True)
class FieldSpec:
    """A field of every frame: a name, a NumPy dtype name and the components of one element."""

    name: str
    dtype: str
    components: int = 1


class Writer:
    """Writes a container to ``<path>.partial`` and renames it to ``path`` on :meth:`close`.

    Every chunk of a frame's field holds ``chunk_size_bytes`` (rounded down to whole elements, at least
    one), the last one the rest, however the field's elements were cut into :meth:`write` calls: a
    write's tail that does not fill a chunk is copied and held (one chunk of memory) until the next
    write of that field, another field or :meth:`close`.

    Used as a context manager, leaving the block by an exception removes the partial file, so a
    failed conversion leaves nothing behind::

        with headrace.Writer("out.hrc", [FieldSpec("particles", "float32", 8)]) as w:
            f = w.add_frame(time=0.0, bbox=((0, 0, 0), (1, 1, 1)))
            w.write(f, "particles", array)          # shape (n, 8) or flat
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        fields: Sequence[FieldSpec],
        *,
        chunk_size_bytes: int | None = None,
        codec: Codec = "none",
        codec_level: int | None = None,
        encode_threads: int = 0,
    ) -> None:
        self.path = os.fspath(path)
        self.fields = list(fields)
        self.chunk_size_bytes = int(chunk_size_bytes or default_chunk_size(codec))
        self._index = {f.name: i for i, f in enumerate(self.fields)}
        self._dtypes = {f.name: np.dtype(f.dtype) for f in self.fields}
        self._native = _ext.ContainerWriter(
            self.path,
            [(f.name, np.dtype(f.dtype).name, int(f.components)) for f in self.fields],
            chunk_size_bytes=self.chunk_size_bytes,
            codec=codec,
            codec_level=int(codec_level or 0),
            encode_threads=int(encode_threads),
        )
        self._frames = 0
        # The (frame, field) being written, and the first ``_held`` values of ``_chunk``: its values that do
        # not fill a chunk yet (one chunk of memory, reused).
        self._open: tuple[int, str] | None = None
        self._chunk = np.empty(0, np.uint8)
        self._held = 0
        self._closed = False

    def set_attribute(self, name: str, value: int | float | str | Sequence[int] | Sequence[float]) -> None:
        """Stores a data-set attribute: a string, or numbers (kept as int64 or float64 arrays)."""
        if isinstance(value, str):
            self._native.set_attribute(name, value)
            return
        array = np.atleast_1d(np.asarray(value))
        if array.ndim != 1 or array.dtype.kind not in "iubf":
            raise _ext.UsageError(f"attribute {name!r}: expected a string or a flat sequence of numbers, got {value!r}")
        if array.dtype.kind == "f":
            self._native.set_attribute(name, [float(v) for v in array])
        else:
            self._native.set_attribute(name, [int(v) for v in array])

    def add_frame(self, time: float, bbox: BBox | None = None) -> int:
        """Starts a frame; returns its index. ``bbox`` is ((xmin, ymin, zmin), (xmax, ymax, zmax))."""
        box = None if bbox is None else (tuple(float(v) for v in bbox[0]), tuple(float(v) for v in bbox[1]))
        self._frames = self._native.add_frame(float(time), box) + 1
        return self._frames - 1

    def write(self, frame: int, field: str, data: np.ndarray) -> None:
        """Appends elements of ``field`` in ``frame``; consecutive calls for the same field append."""
        if field not in self._index:
            raise _ext.UnknownNameError(f"{self.path}: no field {field!r} (fields: {', '.join(self._index)})")
        if not 0 <= frame < self._frames:
            raise _ext.UsageError(f"{self.path}: frame {frame} was not added")
        array = np.asarray(data)
        if array.dtype != self._dtypes[field]:
            raise _ext.UsageError(
                f"{self.path}: field {field!r} holds {self._dtypes[field].name}, got an array of {array.dtype.name}"
            )
        values = np.ascontiguousarray(array).reshape(-1)
        index = self._index[field]
        components = self.fields[index].components
        if values.size % components:  # the native writer names the fault
            self._native.write_field(frame, index, values)
        if self._open != (frame, field):
            self._flush()
            self._open = (frame, field)
        if values.size == 0:  # an empty frame-field (a frame without particles; format 1.2), or nothing to append
            self._native.write_field(frame, index, values)
            return
        chunk_values = max(1, self.chunk_size_bytes // (values.itemsize * components)) * components
        if self._held:  # complete the held chunk first
            taken = min(chunk_values - self._held, values.size)
            self._chunk[self._held:self._held + taken] = values[:taken]
            self._held += taken
            values = values[taken:]
            if self._held < chunk_values:
                return
            self._native.write_field(frame, index, self._chunk)
            self._held = 0
        whole = values.size - values.size % chunk_values
        if whole:
            self._native.write_field(frame, index, values[:whole])
        if whole < values.size:  # a copy: the caller may reuse its array
            if self._chunk.size != chunk_values or self._chunk.dtype != values.dtype:
                self._chunk = np.empty(chunk_values, values.dtype)
            self._held = values.size - whole
            self._chunk[:self._held] = values[whole:]

    def _flush(self) -> None:
        """Writes the held rest of the open field: the last, short chunk of that frame's field."""
        if self._held and self._open is not None:
            frame, field = self._open
            self._native.write_field(frame, self._index[field], self._chunk[:self._held])
        self._held = 0

    def close(self) -> None:
        """Writes the index and superblock, fsyncs and renames over ``path``."""
        if not self._closed:
            try:
                self._flush()
            except BaseException:
                self.abort()
                raise
            self._closed = True
            self._native.close()

    def abort(self) -> None:
        """Removes the partial file; the final path is left untouched."""
        self._closed = True
        self._held = 0
        self._native.abort()

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
