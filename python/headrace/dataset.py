"""Reading ``.hrc`` containers: :func:`open` returns a :class:`Dataset`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from headrace import _ext
from headrace.settings import io_settings

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
        return self._container.frame_field(frame, self._container.field_index(field))[0]

    def backend(self, kind: str = "posix", **options: Any) -> Any:
        """The backend ``kind`` opened on this file with ``options`` (kept open: ``ram`` preloads)."""
        key = (kind, tuple(sorted(options.items())))
        if key not in self._backends:
            self._backends[key] = _ext.open_backend(kind, self.path, io_settings(**options))
        return self._backends[key]

    def read(self, frame: int, field: str | None = None, *, backend: str = "posix", verify: bool = True,
             **backend_options: Any) -> np.ndarray:
        """Field ``field`` (default: the only/first one) of ``frame`` as an array of shape (n, components)."""
        name = field if field is not None else self.fields[0].name
        index = self._container.field_index(name)
        info = self.fields[index]
        count = self._container.frame_field(frame, index)[0]
        out = np.empty((count, info.components), dtype=np.dtype(info.dtype))
        _ext.read_field(self._container, self.backend(backend, **backend_options), frame, index,
                        out.reshape(-1).view(np.uint8), verify)
        return out

    def stream(self, fields: list[str] | None = None, *, device: int | str | None = None, prefetch: int = 3,
               **options: Any) -> Any:
        """A :class:`headrace.FrameStream` playing this dataset's frames into GPU ``device`` (or ``"cpu"``)."""
        from headrace.stream import FrameStream

        return FrameStream(self, fields=fields, device=device, prefetch=prefetch, **options)

    def close(self) -> None:
        """Closes the backends opened by :meth:`read` (the index needs no file handle)."""
        self._backends.clear()

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
