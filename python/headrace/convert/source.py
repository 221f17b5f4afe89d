"""What every input reader hands to the converter: fields, attributes and a stream of frames.

A reader parses and checks everything it can (headers, tables, sizes) when it is opened, before any
output exists, so that most bad inputs fail without creating a file; what it can only see while reading
frames it reports from ``frames()``, inside the writer's ``with`` block, which removes the partial output.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Union

import numpy as np

from headrace import errors

__all__ = [
    "AttributeValue",
    "BBox",
    "FieldInfo",
    "Piece",
    "SourceFrame",
    "Source",
    "ConversionNote",
    "bad_data",
    "open_error",
    "natural_key",
    "STORABLE_DTYPES",
    "storable_dtype",
]

BBox = tuple[tuple[float, float, float], tuple[float, float, float]]
AttributeValue = Union[int, float, str, Sequence[int], Sequence[float]]

# The element types a container field may hold (docs/format.md, table 5.6), as NumPy dtypes.
STORABLE_DTYPES = tuple(
    np.dtype(name)
    for name in ("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32", "float64")
)


@dataclass(frozen=True)
class FieldInfo:
    """One output field: its name, element type and number of components per element."""

    name: str
    dtype: np.dtype
    components: int


@dataclass(frozen=True)
class Piece:
    """Consecutive elements of one field: shape ``(elements, components)``, the field's dtype.

    ``source_bytes`` is how many input bytes the piece stands for (for progress reporting).
    """

    field: str
    array: np.ndarray
    source_bytes: int


@dataclass(frozen=True)
class SourceFrame:
    """One frame ready to write: time, bounding box (``None`` when unknown) and its data in pieces.

    ``pieces`` yields every field's elements in order, all pieces of one field back to back (the writer
    appends consecutive writes of a field), so a frame never has to be in memory whole.
    """

    time: float
    bbox: BBox | None
    pieces: Iterable[Piece]


class Source(Protocol):
    """An opened, checked input: everything the converter needs to write a container.

    Read-only here (properties), so that a reader may hold them in any form: a list, a dict."""

    @property
    def path(self) -> Path: ...

    @property
    def fields(self) -> Sequence[FieldInfo]: ...

    @property
    def attributes(self) -> Mapping[str, AttributeValue]: ...

    @property
    def frame_count(self) -> int: ...

    @property
    def total_bytes(self) -> int: ...

    def frames(self) -> Iterator[SourceFrame]:
        """Yield the frames in order; raise a ``BadDataError`` subclass for data found to be bad."""
        ...


class ConversionNote(UserWarning):
    """A choice a reader made that the user should hear of once (the CLI prints it on stderr): what it
    converts when nothing named it, and how to name something else."""


def bad_data(kind: type[Exception], path: os.PathLike | str, offset: int, expected: str, found: str) -> Exception:
    """Build a bad-data error in the house format: ``<path>: offset <N>: expected <X>, found <Y>``."""
    return kind(f"{path}: offset {offset}: expected {expected}, found {found}")


def open_error(path: os.PathLike | str, error: OSError) -> Exception:
    """Turn an ``OSError`` from opening or reading ``path`` into headrace's ``FileOpenError``."""
    return errors.FileOpenError(f"{path}: cannot open for reading: {error.strerror or error}")


def natural_key(path: os.PathLike | str) -> list[object]:
    """Sort key that orders ``t2`` before ``t10`` (digit runs compare as numbers)."""
    name = os.fspath(path)
    key: list[object] = []
    digits = ""
    text = ""
    for character in name:
        if character.isdigit():
            if text:
                key.append(text)
                text = ""
            digits += character
        else:
            if digits:
                key.append(int(digits))
                digits = ""
            text += character
    if digits:
        key.append(int(digits))
    if text:
        key.append(text)
    # Keep int/str comparisons well defined: tag each part with its kind.
    return [(0, part) if isinstance(part, int) else (1, part) for part in key]


def storable_dtype(dtype: np.dtype, path: os.PathLike | str, what: str) -> np.dtype:
    """Return ``dtype`` in native byte order if a container can hold it, else raise ``UsageError``."""
    native = dtype.newbyteorder("=") if dtype.byteorder not in ("=", "|") else dtype
    if native not in STORABLE_DTYPES:
        names = ", ".join(str(d) for d in STORABLE_DTYPES)
        raise errors.UsageError(f"{path}: {what} has dtype {dtype}, which a container cannot hold (one of {names})")
    return np.dtype(native.name)
