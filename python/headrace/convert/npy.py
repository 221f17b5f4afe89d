"""NumPy ``.npy`` and ``.npz`` files, one frame each or one frame per archive member.

Inputs and what they become:

- one ``.npy``: one frame of one field, named ``field`` or the file's stem;
- several ``.npy`` (a directory, list or glob): one frame per file in order, one field named ``field`` or
  the first file's stem without its trailing frame number (``density_0007`` -> ``density``);
- one ``.npz``: one frame per member, members in natural order (``f2`` before ``f10``), one field named
  ``field`` or the archive's stem;
- several ``.npz`` (a directory, list or glob): one frame per archive, one field per member (the member
  name is the field name); every archive has the same members.

Array shapes: ``(n,)`` is n elements of 1 component, ``(n, c)`` n elements of c components, ``(Z, Y, X)`` a
scalar grid and ``(Z, Y, X, c)`` a grid of c components, stored x fastest (C order) with ``grid_dims``
``[X, Y, Z]``, ``grid_origin`` ``[0, 0, 0]`` and ``grid_spacing`` ``[1, 1, 1]``.
"""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

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

__all__ = ["NpySource", "open_npy"]

NPY_MAGIC = b"\x93NUMPY"
# Bytes of an array converted and written at a time (bounds the memory a frame needs).
_SLICE_BYTES = 32 << 20
ZIP_MAGIC = b"PK\x03\x04"


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

    def pieces(self, name: str) -> Iterator[Piece]:
        """The array as ``(elements, components)`` pieces of about :data:`_SLICE_BYTES`, C order, native.

        A ``.npy`` is memory-mapped and cut along its first (slowest) axis, so only a piece at a time is
        converted; an ``.npz`` member is decompressed whole first.
        """
        from headrace import errors

        if self.shape[0] == 0:  # an empty frame: the converter writes it as one
            return
        array: np.ndarray
        if self.member is None:
            array = np.memmap(
                self.path, dtype=self.dtype, mode="r", offset=self.data_offset, shape=self.shape,
                order="F" if self.fortran_order else "C",
            )
        else:
            try:
                with zipfile.ZipFile(self.path) as archive, archive.open(self.member + ".npy") as member:
                    array = np.lib.format.read_array(member, allow_pickle=False)
            except zipfile.BadZipFile as error:
                kind = errors.ChecksumMismatchError if "CRC" in str(error) else errors.CorruptIndexError
                raise bad_data(kind, self.label, 0, "an intact archive member", str(error)) from None
        native = np.dtype(self.dtype.name)
        components = _elements_and_components(self.shape)[1]
        row_bytes = max(1, self.nbytes // self.shape[0])
        step = max(1, _SLICE_BYTES // row_bytes)
        for start in range(0, self.shape[0], step):
            part = np.ascontiguousarray(array[start : start + step], dtype=native).reshape(-1, components)
            yield Piece(name, part, part.nbytes)
        del array


class NpySource:
    """Opened and checked NumPy inputs; see :func:`open_npy`."""

    def __init__(self, path: Path, fields: list[FieldInfo], frames: list[dict[str, _ArrayRef]]) -> None:
        self.path = path
        self.fields = fields
        self._frames = frames
        self.frame_count = len(frames)
        self.total_bytes = sum(ref.nbytes for frame in frames for ref in frame.values())
        self.attributes: dict[str, AttributeValue] = {"source_format": "npy", "source_path": os.fspath(path)}
        grid = _grid_dims(frames)
        self._bbox: BBox | None = None
        if grid is not None:
            self.attributes.update(
                grid_dims=list(grid), grid_origin=[0.0, 0.0, 0.0], grid_spacing=[1.0, 1.0, 1.0], layout="linear"
            )
            self._bbox = ((0.0, 0.0, 0.0), tuple(float(d - 1) for d in grid))  # type: ignore[assignment]

    def frames(self) -> Iterator[SourceFrame]:
        for index, frame in enumerate(self._frames):
            yield SourceFrame(time=float(index), bbox=self._bbox, pieces=_pieces(frame))


def _pieces(frame: dict[str, _ArrayRef]) -> Iterator[Piece]:
    for name, ref in frame.items():
        yield from ref.pieces(name)


def open_npy(paths: Sequence[os.PathLike | str], *, field: str | None = None) -> NpySource:
    """Read every array's header and check that the frames agree (see the module docstring for the rules).

    Raises ``BadMagicError`` (not a ``.npy``/``.npz``), ``UnsupportedVersionError`` (an ``.npy`` format
    version other than 1.0 or 2.0), ``TruncatedFileError`` (fewer data bytes than the header says),
    ``CorruptIndexError`` (a broken header or archive, frames that disagree), ``EmptyFieldError`` (an
    array without elements) and ``UsageError`` (a dtype or shape a container cannot hold).
    """
    from headrace import errors

    files = [Path(path) for path in paths]
    if not files:
        raise errors.UsageError("no .npy or .npz files given")
    suffixes = {path.suffix.lower() for path in files}
    if suffixes - {".npy", ".npz"} or len(suffixes) != 1:
        raise errors.UsageError(f"expected only .npy or only .npz files, got {', '.join(sorted(suffixes))}")
    if suffixes == {".npy"}:
        name = field or (files[0].stem if len(files) == 1 else _frame_stem(files[0].stem))
        frames = [{name: _read_npy(path)} for path in files]
    elif len(files) == 1:
        name = field or files[0].stem
        members = _read_npz(files[0])
        frames = [{name: members[key]} for key in sorted(members, key=natural_key)]
    else:
        if field is not None:
            raise errors.UsageError("--field does not apply to several .npz files (member names are the fields)")
        frames = [_read_npz(path) for path in files]
        frames = [{key: frame[key] for key in sorted(frame, key=natural_key)} for frame in frames]
    fields = _check_frames(frames)
    return NpySource(files[0], fields, frames)


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
    from headrace import errors

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
    from headrace import errors

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
    if len(shape) not in (1, 2, 3, 4):
        raise errors.UsageError(
            f"{label}: shape {shape} is not (n,), (n, c), (Z, Y, X) or (Z, Y, X, c)"
        )
    ref = _ArrayRef(path, member, tuple(shape), bool(fortran_order), dtype, handle.tell())
    # (0,) or (0, c) is a frame without elements (an empty frame); a grid or c = 0 holds nothing to store.
    if ref.nbytes == 0 and not (len(shape) in (1, 2) and shape[0] == 0 and (len(shape) == 1 or shape[1] > 0)):
        raise bad_data(errors.EmptyFieldError, label, ref.data_offset, "at least one element", f"shape {shape}")
    return ref


def _check_size(ref: _ArrayRef, size: int) -> None:
    from headrace import errors

    if size < ref.data_offset + ref.nbytes:
        raise bad_data(
            errors.TruncatedFileError, ref.label, ref.data_offset,
            f"{ref.nbytes} bytes of {ref.dtype} values (shape {ref.shape})", f"{size - ref.data_offset} bytes",
        )


def _check_frames(frames: list[dict[str, _ArrayRef]]) -> list[FieldInfo]:
    """Fields from the first frame; every frame must have the same fields, dtypes, components and grids."""
    from headrace import errors

    first = frames[0]
    fields = [
        FieldInfo(name, np.dtype(ref.dtype.name), _elements_and_components(ref.shape)[1]) for name, ref in first.items()
    ]
    for frame in frames[1:]:
        if list(frame) != list(first):
            label = next(iter(frame.values())).path
            raise bad_data(
                errors.CorruptIndexError, label, 0, f"the arrays {', '.join(first)}", ", ".join(frame) or "none"
            )
        for info in fields:
            ref, model = frame[info.name], first[info.name]
            components = _elements_and_components(ref.shape)[1]
            if np.dtype(ref.dtype.name) != info.dtype or components != info.components:
                raise bad_data(
                    errors.CorruptIndexError, ref.label, 0,
                    f"{info.dtype} x {info.components} as in {model.label}", f"{ref.dtype} x {components}",
                )
            if len(model.shape) >= 3 and ref.shape[:3] != model.shape[:3]:
                raise bad_data(
                    errors.CorruptIndexError, ref.label, 0, f"grid shape {model.shape[:3]} as in {model.label}",
                    str(ref.shape[:3]),
                )
    return fields


def _grid_dims(frames: list[dict[str, _ArrayRef]]) -> tuple[int, int, int] | None:
    """``(X, Y, Z)`` of the grid arrays; they must all share one grid."""
    from headrace import errors

    grids = {ref.shape[:3]: ref for ref in frames[0].values() if len(ref.shape) >= 3}
    if not grids:
        return None
    if len(grids) > 1:
        shapes = list(grids)
        raise bad_data(
            errors.CorruptIndexError, grids[shapes[1]].label, 0, f"grid shape {shapes[0]} shared by every grid array",
            str(shapes[1]),
        )
    z, y, x = next(iter(grids))
    return (x, y, z)


def _elements_and_components(shape: tuple[int, ...]) -> tuple[int, int]:
    if len(shape) == 1:
        return shape[0], 1
    if len(shape) == 2:
        return shape[0], shape[1]
    if len(shape) == 3:
        return shape[0] * shape[1] * shape[2], 1
    return shape[0] * shape[1] * shape[2], shape[3]


def _frame_stem(stem: str) -> str:
    """``density_0007`` -> ``density``; a stem that is only a number becomes ``data``."""
    return re.sub(r"[\s._-]*\d+$", "", stem) or "data"
