"""NumPy ``.npy`` and ``.npz`` files, one frame each or one frame per archive member.

Inputs and what they become:

- one ``.npy``: one frame of one field, named ``field`` or the file's stem;
- several ``.npy`` (a directory, list or glob): one frame per file in order, one field named ``field`` or
  the first file's stem without its trailing frame number (``density_0007`` -> ``density``);
- one ``.npz``: one frame per member, members in natural order (``f2`` before ``f10``), one field named
  ``field`` or the archive's stem;
- several ``.npz`` (a directory, list or glob): one frame per archive, one field per member (the member
  name is the field name); every archive has the same members.

Array shapes (``_arrays.array_layout``, docs/converters.md "Time in arrays"): ``(n,)`` is n elements of 1
component, ``(n, c)`` n elements of c components, ``(Z, Y, X)`` a scalar grid and ``(Z, Y, X, c)`` one of c components, ``(t, Z, Y, X, c)`` t frames of
a grid of c components; a 4-D array is ``(t, Z, Y, X)`` unless its last axis may be components (1 to 4):
then ``components`` or ``time_axis`` must say which (or another array of the frame, whose grid is its first
or last three axes). ``time_axis`` makes any axis time. Grids are stored x fastest (C order) with
``grid_dims`` ``[X, Y, Z]``, ``grid_origin`` ``[0, 0, 0]`` and ``grid_spacing`` ``[1, 1, 1]``. An array
with a time axis gives a frame per index along it, in order, before the next file's.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from headrace import errors
from headrace.convert import _arrays
from headrace.convert._arrays import ArrayLayout
from headrace.convert.source import (
    AttributeValue,
    BBox,
    FieldInfo,
    Piece,
    SourceFrame,
    bad_data,
    natural_key,
    open_error,
    storable_dtype,
)

__all__ = ["NpySource", "open_npy", "has_npy_magic"]

NPY_MAGIC = b"\x93NUMPY"
# Bytes of an array converted and written at a time (bounds the memory a frame needs).
_SLICE_BYTES = 32 << 20
ZIP_MAGIC = b"PK\x03\x04"


def has_npy_magic(head: bytes) -> bool:
    """Whether a file's first bytes are a ``.npy`` file's or a zip archive's (``.npz``)."""
    return head.startswith(NPY_MAGIC) or head.startswith(ZIP_MAGIC)


@dataclass(frozen=True)
class _ArrayRef:
    """Where one array lives (a ``.npy`` file or an ``.npz`` member) and its header."""

    path: Path
    member: str | None  # None for a .npy file
    shape: tuple[int, ...]
    fortran_order: bool
    dtype: np.dtype
    data_offset: int  # within the .npy file or member

    @property
    def label(self) -> str:
        return f"{self.path}[{self.member}]" if self.member is not None else os.fspath(self.path)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def load(self) -> np.ndarray:
        """The array: a ``.npy`` memory-mapped, an ``.npz`` member decompressed whole."""
        if self.member is None:
            return np.memmap(self.path, dtype=self.dtype, mode="r", offset=self.data_offset, shape=self.shape,
                             order="F" if self.fortran_order else "C")
        try:
            with zipfile.ZipFile(self.path) as archive, archive.open(self.member + ".npy") as member:
                return np.lib.format.read_array(member, allow_pickle=False)
        except zipfile.BadZipFile as error:
            kind = errors.ChecksumMismatchError if "CRC" in str(error) else errors.CorruptIndexError
            raise bad_data(kind, self.label, 0, "an intact archive member", str(error)) from None


@dataclass(frozen=True)
class _FramePart:
    """One frame of one field: an array, or one step along its time axis."""

    ref: _ArrayRef
    layout: ArrayLayout
    step: int | None

    @property
    def nbytes(self) -> int:
        return self.ref.nbytes // self.layout.steps

    def pieces(self, name: str, array: np.ndarray) -> Iterator[Piece]:
        """The frame as ``(elements, components)`` pieces of about :data:`_SLICE_BYTES`, C order, native,
        cut along its first (slowest) axis, so only a piece at a time is converted."""
        frame = array[self.layout.select(self.step, (), array.ndim)]  # type: ignore[index]
        if frame.shape[0] == 0:  # an empty frame: the converter writes it as one
            return
        native = np.dtype(self.ref.dtype.name)
        components = self.layout.frame.components
        row_bytes = max(1, frame.nbytes // frame.shape[0])
        step = max(1, _SLICE_BYTES // row_bytes)
        for start in range(0, frame.shape[0], step):
            part = np.ascontiguousarray(frame[start : start + step], dtype=native).reshape(-1, components)
            yield Piece(name, part, part.nbytes)


class NpySource:
    """Opened and checked NumPy inputs; see :func:`open_npy`."""

    def __init__(self, path: Path, fields: list[FieldInfo], frames: list[dict[str, _FramePart]]) -> None:
        self.path = path
        self.fields = fields
        self._frames = frames
        self.frame_count = len(frames)
        self.total_bytes = sum(part.nbytes for frame in frames for part in frame.values())
        self.attributes: dict[str, AttributeValue] = {"source_format": "npy", "source_path": os.fspath(path)}
        grid = _grid(frames)
        self._bbox: BBox | None = None
        if grid is not None:
            grid_attributes, self._bbox = _arrays.grid_attributes(grid)
            self.attributes.update(grid_attributes)
        # The .npz member last decompressed (once for all its steps); a .npy is mapped afresh for each frame,
        # so the pages a frame touched leave the process with it.
        self._loaded: tuple[_ArrayRef, np.ndarray] | None = None

    def frames(self) -> Iterator[SourceFrame]:
        try:
            for index, frame in enumerate(self._frames):
                yield SourceFrame(time=float(index), bbox=self._bbox, pieces=self._pieces(frame))
        finally:
            self._loaded = None

    def _pieces(self, frame: dict[str, _FramePart]) -> Iterator[Piece]:
        for name, part in frame.items():
            if part.ref.member is None:
                array = part.ref.load()
                yield from part.pieces(name, array)
                del array
                continue
            if self._loaded is None or self._loaded[0] != part.ref:
                self._loaded = None  # the earlier member goes before the next one is read
                self._loaded = (part.ref, part.ref.load())
            yield from part.pieces(name, self._loaded[1])


def open_npy(paths: Sequence[os.PathLike | str], *, field: str | None = None, time_axis: int | None = None,
             components: int | None = None) -> NpySource:
    """Read every array's header and check that the frames agree (see the module docstring for the rules).

    Raises ``BadMagicError`` (not a ``.npy``/``.npz``), ``UnsupportedVersionError`` (an ``.npy`` format
    version other than 1.0 or 2.0), ``TruncatedFileError`` (fewer data bytes than the header says),
    ``CorruptIndexError`` (a broken header or archive, frames that disagree), ``EmptyFieldError`` (an
    array without elements), ``BadDataError`` (a shape that is no frame) and ``UsageError`` (a dtype a
    container cannot hold, a 4-D shape that may be a grid of components or a time series).
    """
    files = [Path(path) for path in paths]
    if not files:
        raise errors.UsageError("no .npy or .npz files given")
    suffixes = {path.suffix.lower() for path in files}
    if suffixes - {".npy", ".npz"} or len(suffixes) != 1:
        raise errors.UsageError(f"expected only .npy or only .npz files, got {', '.join(sorted(suffixes))}")
    if suffixes == {".npy"}:
        name = field or (files[0].stem if len(files) == 1 else _arrays.frame_stem(files[0].stem))
        groups = [{name: _read_npy(path)} for path in files]
    elif len(files) == 1:
        name = field or files[0].stem
        members = _read_npz(files[0])
        groups = [{name: members[key]} for key in sorted(members, key=natural_key)]
    else:
        if field is not None:
            raise errors.UsageError("--field does not apply to several .npz files (member names are the fields)")
        groups = [_read_npz(path) for path in files]
        groups = [{key: group[key] for key in sorted(group, key=natural_key)} for group in groups]
    frames = [frame for index, group in enumerate(groups)
              for frame in _group_frames(group, time_axis, components, say=index == 0)]
    fields = _check_frames(frames)
    return NpySource(files[0], fields, frames)


def _group_frames(group: dict[str, _ArrayRef], time_axis: int | None, components: int | None,
                  say: bool) -> list[dict[str, _FramePart]]:
    """The frames one file (or archive, or member) gives: one, or one per step along its time axis;
    ``say``: a time axis taken by the shape rule is said (for the first file only)."""
    first = next(iter(group.values()))
    layouts = _arrays.resolve_layouts({ref.label: ref.shape for ref in group.values()}, first.path,
                                      time_axis=time_axis, components=components, say=say)
    steps = {ref.label: layouts[ref.label].steps for ref in group.values()}
    if len(set(steps.values())) > 1:
        listed = ", ".join(f"{label} ({count})" for label, count in steps.items())
        raise bad_data(errors.CorruptIndexError, first.path, 0, "arrays of as many time steps", listed)
    return [{name: _FramePart(ref, layouts[ref.label], None if layouts[ref.label].time_axis is None else step)
             for name, ref in group.items()} for step in range(steps[first.label])]


def _read_npy(path: Path) -> _ArrayRef:
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            ref = _read_header(handle, path, None)
    except OSError as error:
        raise open_error(path, error) from error
    _check_size(ref, size)
    return ref


def _read_npz(path: Path) -> dict[str, _ArrayRef]:
    try:
        with open(path, "rb") as handle:
            magic = handle.read(len(ZIP_MAGIC))
    except OSError as error:
        raise open_error(path, error) from error
    if magic != ZIP_MAGIC:
        raise bad_data(errors.BadMagicError, path, 0, "an .npz (zip) archive starting with 'PK\\x03\\x04'", repr(magic))
    members: dict[str, _ArrayRef] = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if not info.filename.endswith(".npy"):
                    raise bad_data(
                        errors.CorruptIndexError, path, info.header_offset, "only .npy members", repr(info.filename)
                    )
                key = info.filename[: -len(".npy")]
                with archive.open(info) as member:
                    ref = _read_header(member, path, key)
                _check_size(ref, info.file_size)
                members[key] = ref
    except zipfile.BadZipFile as error:
        raise bad_data(errors.CorruptIndexError, path, 0, "a readable zip archive", str(error)) from None
    if not members:
        raise bad_data(errors.EmptyFieldError, path, 0, "at least one array", "an empty archive")
    return members


def _read_header(handle, path: Path, member: str | None) -> _ArrayRef:
    label = f"{path}[{member}]" if member is not None else os.fspath(path)
    magic = handle.read(len(NPY_MAGIC))
    if magic != NPY_MAGIC:
        raise bad_data(errors.BadMagicError, label, 0, "the .npy magic '\\x93NUMPY'", repr(magic))
    version = tuple(handle.read(2))
    try:
        if version == (1, 0):
            shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(handle)
        elif version == (2, 0):
            shape, fortran_order, dtype = np.lib.format.read_array_header_2_0(handle)
        else:
            raise bad_data(errors.UnsupportedVersionError, label, 6, ".npy format version 1.0 or 2.0", str(version))
    except ValueError as error:
        raise bad_data(errors.CorruptIndexError, label, 8, "a readable .npy header", str(error)) from None
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise errors.UsageError(f"{label}: holds Python objects, which a container cannot hold")
    storable_dtype(dtype, label, "the array")
    if not 1 <= len(shape) <= 5:
        raise errors.UsageError(
            f"{label}: shape {shape} is not (n,), (n, c), (Z, Y, X), (Z, Y, X, c), (t, Z, Y, X) or (t, Z, Y, X, c)"
        )
    ref = _ArrayRef(path, member, tuple(shape), bool(fortran_order), dtype, handle.tell())
    # (0,) or (0, c) is a frame without elements (an empty frame); a grid or c = 0 holds nothing to store.
    if ref.nbytes == 0 and not (len(shape) in (1, 2) and shape[0] == 0 and (len(shape) == 1 or shape[1] > 0)):
        raise bad_data(errors.EmptyFieldError, label, ref.data_offset, "at least one element", f"shape {shape}")
    return ref


def _check_size(ref: _ArrayRef, size: int) -> None:
    if size < ref.data_offset + ref.nbytes:
        raise bad_data(
            errors.TruncatedFileError, ref.label, ref.data_offset,
            f"{ref.nbytes} bytes of {ref.dtype} values (shape {ref.shape})", f"{size - ref.data_offset} bytes",
        )


def _check_frames(frames: list[dict[str, _FramePart]]) -> list[FieldInfo]:
    """Fields from the first frame; every frame must have the same fields, dtypes, components and grids."""
    first = frames[0]
    fields = [FieldInfo(name, np.dtype(part.ref.dtype.name), part.layout.frame.components)
              for name, part in first.items()]
    for frame in frames[1:]:
        if list(frame) != list(first):
            label = next(iter(frame.values())).ref.path
            raise bad_data(
                errors.CorruptIndexError, label, 0, f"the arrays {', '.join(first)}", ", ".join(frame) or "none"
            )
        for info in fields:
            part, model = frame[info.name], first[info.name]
            shape = part.layout.frame
            if np.dtype(part.ref.dtype.name) != info.dtype or shape.components != info.components:
                raise bad_data(
                    errors.CorruptIndexError, part.ref.label, 0,
                    f"{info.dtype} x {info.components} as in {model.ref.label}",
                    f"{part.ref.dtype} x {shape.components}",
                )
            if model.layout.frame.grid is not None and shape.grid != model.layout.frame.grid:
                raise bad_data(
                    errors.CorruptIndexError, part.ref.label, 0,
                    f"grid shape {model.layout.frame.grid} as in {model.ref.label}", str(shape.grid or part.ref.shape),
                )
    return fields


def _grid(frames: list[dict[str, _FramePart]]) -> tuple[int, int, int] | None:
    """``(Z, Y, X)`` of the grid arrays; they must all share one grid."""
    grids = {part.layout.frame.grid: part for part in frames[0].values() if part.layout.frame.grid is not None}
    if not grids:
        return None
    if len(grids) > 1:
        shapes = list(grids)
        raise bad_data(
            errors.CorruptIndexError, grids[shapes[1]].ref.label, 0,
            f"grid shape {shapes[0]} shared by every grid array", str(shapes[1]),
        )
    return next(iter(grids))
