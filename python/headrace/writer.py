"""Writing ``.hrc`` containers (docs/format.md) from NumPy arrays, crash-safely."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from headrace import _ext, codecs
from headrace.container import open_container

__all__ = ["FieldSpec", "Writer", "Codec", "AutoOptions", "default_chunk_size"]

# "none", a plain codec ("lz4", "zstd", "gdeflate"), a chain of stages ("split|shuffle|zstd(level=5)",
# docs/codecs/) or "auto" (headrace.codecs.choose picks one per field from its first data).
Codec = str
# gdeflate chunks in one stream hold at most 64 KiB raw (nvCOMP's CPU encoder; docs/codecs/gdeflate.md).
GDEFLATE_MAX_CHUNK_BYTES = codecs.STAGES["gdeflate"]["max_block_bytes"]
DEFAULT_CHUNK_BYTES = 4 << 20
# The codecs a chunk record names by themselves (docs/format.md 5.7); any other is a chain's.
PLAIN_CODECS = tuple(name for name in _ext.record_codecs() if name != "chain")
# Chunks of a field's first data that codec="auto" tries its candidates on.
AUTO_SAMPLE_CHUNKS = 4


def default_chunk_size(codec: str | Mapping[str, str]) -> int:
    """The chunk size a writer takes when given none: 4 MiB, or 64 KiB (the most it takes) for gdeflate in
    one stream a chunk; gdeflate in blocks (in a chain, or block= other than 0) takes 4 MiB chunks."""
    chains = list(codec.values()) if isinstance(codec, Mapping) else [codec]
    return GDEFLATE_MAX_CHUNK_BYTES if any(codecs.gdeflate_in_one_stream(c) for c in chains) else DEFAULT_CHUNK_BYTES


@dataclass(frozen=True)
class AutoOptions:
    """How ``codec="auto"`` chooses (headrace.codecs.choose): the objective, the disk's rate for
    ``"delivery"`` (None: a short probe of the output's directory), whether codecs only a GPU decodes may
    be chosen, and the GPU that times decoding (None: GPU 0 when there is one, else the CPU)."""

    objective: str = "delivery"
    disk_bytes_per_second: float | None = None
    gpu_only: bool = False
    device: int | None = None
BBox = tuple[Sequence[float], Sequence[float]]


@dataclass(frozen=True)
class FieldSpec:
    """A field of every frame: a name, a NumPy dtype name and the components of one element."""

    name: str
    dtype: str
    components: int = 1


class Writer:
    """Writes a container to ``<path>.partial`` and renames it to ``path`` on :meth:`close`; or, with
    ``publish=True`` (format 1.4, docs/format.md 6.1), makes each frame visible in ``path`` as soon as it is
    whole (each :meth:`add_frame` publishes the frames before it, :meth:`publish` those written so far):
    readers see every frame published, a process killed mid-frame leaves them readable, and leaving the block
    by an exception ends the file at its last publication. Its frames are written in order. ``append=True``
    adds frames to the container at ``path`` (its ``fields``), publishing: a run that goes on, or a killed
    writer's file taken up again.

    Every chunk of a frame's field holds ``chunk_size_bytes`` (rounded down to whole elements, at least
    one), the last one the rest, however the field's elements were cut into :meth:`write` calls: a
    write's tail that does not fill a chunk is copied and held (one chunk of memory) until the next
    write of that field, another field or :meth:`close`.

    Used as a context manager, leaving the block by an exception removes the partial file, so a
    failed conversion leaves nothing behind::

        with headrace.Writer("out.hrc", [FieldSpec("particles", "float32", 8)]) as w:
            f = w.add_frame(time=0.0, bbox=((0, 0, 0), (1, 1, 1)))
            w.write(f, "particles", array)          # shape (n, 8) or flat

    **Grids keep their shape.** Writing a 3-D ``(z, y, x)`` array into a field of one component, or a
    4-D ``(z, y, x, c)`` array into a field of c components, records the grid: ``grid_dims`` ``[x, y, z]``,
    and ``grid_origin`` ``[0, 0, 0]``, ``grid_spacing`` ``[1, 1, 1]`` and ``layout`` ``"linear"`` where they
    are not set, so ``headrace.open(path).read(frame, field)`` gives ``(z, y, x)`` or ``(z, y, x, c)``
    back. Slabs of z planes written one after another into the same frame's field add up to one grid.
    A grid that differs from ``grid_dims`` set by :meth:`set_attribute`, or from another field's or
    frame's grid (a container has one), is a ``UsageError``; flat or ``(n, c)`` writes record nothing,
    and with ``layout`` set to another layout (``blocks``, ``hilbert``) arrays are taken as stored.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        fields: Sequence[FieldSpec],
        *,
        chunk_size_bytes: int | None = None,
        codec: Union[Codec, Mapping[str, Codec]] = "none",
        codec_level: int | None = None,
        encode_threads: int = 0,
        auto: AutoOptions | None = None,
        publish: bool = False,
        append: bool = False,
    ) -> None:
        self.path = os.fspath(path)
        self.fields = list(fields)
        self._index = {f.name: i for i, f in enumerate(self.fields)}
        self._dtypes = {f.name: np.dtype(f.dtype) for f in self.fields}
        self._codecs = self._codecs_of(codec, codec_level)
        self.chunk_size_bytes = int(chunk_size_bytes or default_chunk_size(self._codecs))
        self.auto = auto or AutoOptions()
        #: per field, the chain its chunks are stored with (set at its first write), as recorded
        self.chains: dict[str, str] = {}
        #: per field written with codec="auto": the choice and its measurements (headrace.codecs.Choice)
        self.choices: dict[str, object] = {}
        self._attributes: dict[str, object] = {}
        self._disk_rate: tuple[float, str] | None = None
        device = self.auto.device if self.auto.device is not None else 0
        specs = [(f.name, np.dtype(f.dtype).name, int(f.components)) for f in self.fields]
        existing = self._existing(specs) if append else None
        if append:
            self._native = _ext.ContainerWriter.append(self.path, chunk_size_bytes=self.chunk_size_bytes,
                                                       encode_threads=int(encode_threads), device=int(device))
        else:
            self._native = _ext.ContainerWriter(self.path, specs, chunk_size_bytes=self.chunk_size_bytes,
                                                encode_threads=int(encode_threads), device=int(device), publish=bool(publish))
        self.publishing = bool(publish or append)
        # Publishing writers: the first frame not yet whole, and the fields written of each frame from it on.
        self._first_open_frame = 0
        self._fields_written: dict[int, set[str]] = {}
        self._frames = 0
        # The (frame, field) being written, and the first ``_held`` values of ``_chunk``: its values that do
        # not fill a chunk yet (one chunk of memory, reused).
        self._open: tuple[int, str] | None = None
        self._chunk = np.empty(0, np.uint8)
        self._held = 0
        self._closed = False
        # The grid (z, y, x) the open frame's field was written as so far (None: not as a grid), the grid
        # written before (the container's), and whether this writer set grid_dims itself.
        self._open_grid: tuple[int, int, int] | None = None
        self._grid: tuple[int, int, int] | None = None
        self._grid_dims_set_here = False
        if existing is not None:  # appending: its frames, attributes and grid are the file's
            self._frames = self._first_open_frame = len(existing.frames)
            self._attributes = dict(existing.attributes)
            dims = existing.attributes.get("grid_dims")
            if dims is not None and existing.attributes.get("layout", "linear") == "linear":
                self._grid = (int(dims[2]), int(dims[1]), int(dims[0]))

    def _codecs_of(self, codec: Union[Codec, Mapping[str, Codec]], level: int | None) -> dict[str, str]:
        """Each field's codec as written: one for all, or per field name (fields left out: "none")."""
        if isinstance(codec, Mapping):
            unknown = sorted(set(codec) - set(self._index))
            if unknown:
                raise _ext.UnknownNameError(f"{self.path}: codec for {', '.join(unknown)}: no such field "
                                            f"(fields: {', '.join(self._index)})")
            chains = {name: str(codec.get(name, "none")) for name in self._index}
        else:
            chains = {name: str(codec) for name in self._index}
        if level is not None:
            for name, text in chains.items():
                if text not in PLAIN_CODECS[1:]:
                    raise _ext.UsageError(f"codec_level {level} goes with lz4, zstd or gdeflate, not {text!r}: "
                                          f"write the level into the chain, e.g. zstd(level={level})")
                chains[name] = f"{text}(level={int(level)})"
        return chains

    def _fastest_axis_points(self) -> int:
        """delta's rows from the attributes set so far (headrace.codecs.fastest_axis_points)."""
        return codecs.fastest_axis_points(self._attributes)

    def _choose(self, field: str, values: np.ndarray) -> str:
        """codec="auto": tries the candidates on chunks of the field's first data."""
        spec = self.fields[self._index[field]]
        per_chunk = max(1, self.chunk_size_bytes // (values.itemsize * spec.components)) * spec.components
        starts = list(range(0, values.size, per_chunk))
        picked = [starts[i * len(starts) // AUTO_SAMPLE_CHUNKS] for i in range(min(AUTO_SAMPLE_CHUNKS, len(starts)))]
        sample = [values[s:s + per_chunk] for s in sorted(set(picked))]
        rate, source = None, ""
        if self.auto.objective == "delivery":
            if self.auto.disk_bytes_per_second is not None:
                rate, source = float(self.auto.disk_bytes_per_second), "given"
            else:
                if self._disk_rate is None:
                    self._disk_rate = codecs.disk_rate_of(os.path.dirname(os.path.abspath(self.path)))
                rate, source = self._disk_rate
        device = self.auto.device
        if device is None and _ext.gpu_count() > 0:
            device = 0
        choice = codecs.choose(field, sample, dtype=spec.dtype, components=spec.components,
                               fastest_axis_points=self._fastest_axis_points(), objective=self.auto.objective,  # type: ignore[arg-type]
                               disk_bytes_per_second=rate, disk_rate_source=source, device=device,
                               gpu_only=self.auto.gpu_only)
        self.choices[field] = choice
        return choice.spec

    def _start_field(self, field: str, values: np.ndarray) -> None:
        """Sets the field's chain before its first chunk is written."""
        text = self._codecs[field]
        if text == "auto":
            text = self._choose(field, values)
        self.chains[field] = self._native.set_chain(self._index[field], text, self._fastest_axis_points())

    def set_attribute(self, name: str, value: int | float | str | Sequence[int] | Sequence[float]) -> None:
        """Stores a data-set attribute: a string, or numbers (kept as int64 or float64 arrays)."""
        if name == "grid_dims":
            self._grid_dims_set_here = False
        self._attributes[name] = value if isinstance(value, str) else list(np.atleast_1d(np.asarray(value)).tolist())
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
        if self.publishing:
            self._end_field()  # the frames before it are whole: adding one publishes them
        self._frames = self._native.add_frame(float(time), box) + 1
        return self._frames - 1

    def publish(self) -> int:
        """A publishing writer's frames written whole so far, made visible in ``path`` (format 1.4: readers see
        them, followers play them); returns how many are. The first publication renames the partial file."""
        if not self.publishing:
            raise _ext.UsageError(f"{self.path}: this writer does not publish (headrace.Writer(..., publish=True))")
        self._end_field()
        self._native.publish()
        return int(self._native.published_frames)

    def _existing(self, specs: list[tuple[str, str, int]]) -> Any:
        """The container appended to, whose fields must be the ones given (``UsageError`` naming both)."""
        existing = open_container(self.path)
        stored = [(f.name, np.dtype(f.dtype).name, int(f.components)) for f in existing.fields]
        if stored != specs:
            raise _ext.UsageError(f"{self.path}: appending needs its fields {stored}, got {specs}")
        return existing

    def _check_order(self, frame: int, field: str) -> None:
        """A publishing writer writes its frames in order, each whole before the next (a UsageError now, not when
        the held rest of a field reaches the native writer)."""
        written = self._fields_written
        while self._first_open_frame < frame and len(written.get(self._first_open_frame, ())) == len(self.fields):
            written.pop(self._first_open_frame, None)
            self._first_open_frame += 1
        if frame > self._first_open_frame:
            raise _ext.UsageError(f"{self.path}: frame {frame} field {field!r}: a publishing writer writes its frames in "
                                  f"order, each whole before the next (frame {self._first_open_frame} is not)")
        written.setdefault(frame, set()).add(field)

    def _end_field(self) -> None:
        """The open field's held rest written and its grid checked: the field is whole."""
        self._flush()
        self._finish_grid()
        self._open = None

    def write(self, frame: int, field: str, data: np.ndarray) -> None:
        """Appends elements of ``field`` in ``frame``; consecutive calls for the same field append."""
        if field not in self._index:
            raise _ext.UnknownNameError(f"{self.path}: no field {field!r} (fields: {', '.join(self._index)})")
        if not 0 <= frame < self._frames:
            raise _ext.UsageError(f"{self.path}: frame {frame} was not added")
        if self.publishing:
            self._check_order(frame, field)
        array = np.asarray(data)
        if array.dtype != self._dtypes[field]:
            raise _ext.UsageError(
                f"{self.path}: field {field!r} holds {self._dtypes[field].name}, got an array of {array.dtype.name}"
            )
        values = np.ascontiguousarray(array).reshape(-1)
        index = self._index[field]
        components = self.fields[index].components
        grid = self._grid_of(array, components)
        if grid is not None and "grid_dims" not in self._attributes:  # read's shape (and delta's rows) from the start
            self._record_grid(grid)
        if field not in self.chains and values.size:  # an empty frame-field has no chunks to code
            self._start_field(field, values)
        if values.size % components:  # the native writer names the fault
            self._native.write_field(frame, index, values)
        if self._open != (frame, field):
            self._flush()
            self._finish_grid()
            self._open = (frame, field)
            self._open_grid = grid
        elif self._open_grid is not None:  # z slabs of one grid add up
            z, y, x = self._open_grid
            self._open_grid = (z + grid[0], y, x) if grid is not None and grid[1:] == (y, x) else None
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

    def _grid_of(self, array: np.ndarray, components: int) -> tuple[int, int, int] | None:
        """``(z, y, x)`` of an array written as a grid of a linear layout; None for anything else."""
        if self._attributes.get("layout", "linear") != "linear" or array.size == 0:
            return None
        if array.ndim == 3 and components == 1 or array.ndim == 4 and array.shape[3] == components:
            return (int(array.shape[0]), int(array.shape[1]), int(array.shape[2]))
        return None

    def _record_grid(self, grid: tuple[int, int, int]) -> None:
        """Sets ``grid_dims`` (x first) and the placement attributes not set yet."""
        z, y, x = grid
        defaults: dict[str, object] = {"grid_origin": [0.0, 0.0, 0.0], "grid_spacing": [1.0, 1.0, 1.0], "layout": "linear"}
        for name, value in defaults.items():
            if name not in self._attributes:
                self.set_attribute(name, value)  # type: ignore[arg-type]
        self.set_attribute("grid_dims", [x, y, z])
        self._grid_dims_set_here = True

    def _finish_grid(self) -> None:
        """The open frame's field is written: its grid must be the container's (``UsageError`` otherwise)."""
        grid, self._open_grid = self._open_grid, None
        if grid is None or self._open is None or self._attributes.get("layout", "linear") != "linear":
            return
        frame, field = self._open
        dims = self._attributes.get("grid_dims")
        z, y, x = grid
        if self._grid is None and self._grid_dims_set_here:
            self._record_grid(grid)  # the first grid, its z slabs added up
        elif self._grid is not None and grid != self._grid:
            raise _ext.UsageError(f"{self.path}: field {field!r} of frame {frame} written as a {x} x {y} x {z} grid, "
                                  f"another as {self._grid[2]} x {self._grid[1]} x {self._grid[0]}: a container holds "
                                  "one grid")
        elif list(dims or []) != [x, y, z]:  # type: ignore[call-overload]
            raise _ext.UsageError(f"{self.path}: field {field!r} of frame {frame} written as a {x} x {y} x {z} grid "
                                  f"(z, y, x) = {grid}, but grid_dims is {list(dims or [])}: set grid_dims to "  # type: ignore[call-overload]
                                  f"{[x, y, z]} or leave it out")
        self._grid = grid

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
                self._finish_grid()
            except BaseException:
                self.abort()
                raise
            self._closed = True
            if self.choices:  # the choice and its measured reasons travel with the file
                self._native.set_attribute("codec_choice", json.dumps(
                    {name: choice.as_dict() for name, choice in self.choices.items()}))  # type: ignore[attr-defined]
            self._native.close()

    def abort(self) -> None:
        """Removes the partial file, the final path left untouched; a publishing writer's file ends at its last
        publication instead, finished."""
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
