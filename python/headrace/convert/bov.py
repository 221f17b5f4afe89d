"""BOV (brick of values): a small text header naming a raw data file, as VisIt reads it (seed ``002_…``).

Header keys (``KEY: value``, one per line, ``#`` starts a comment): ``DATA_FILE`` (required, relative to
the header), ``DATA_SIZE`` (required, X Y Z), ``DATA_FORMAT`` (required: BYTE, SHORT, INT, FLOAT, DOUBLE),
``VARIABLE`` (default ``var``), ``DATA_ENDIAN`` (LITTLE or BIG, default LITTLE), ``CENTERING`` (NODAL or
ZONAL, default NODAL as in VisIt), ``BRICK_ORIGIN`` (default 0 0 0), ``BRICK_SIZE`` (default 1 1 1),
``DATA_COMPONENTS`` (a count or COMPLEX, default 1), ``BYTE_OFFSET`` (default 0), ``TIME``.
``DIVIDE_BRICK`` and ``DATA_BRICKLETS`` only tell VisIt how to split the work and are ignored. Values are
stored x fastest, then y, then z, the components of a point together.

Several headers (a list, a glob or a directory) become frames in order; they must agree on everything but
``DATA_FILE``, ``BYTE_OFFSET`` and ``TIME``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import numpy as np

from headrace import errors
from headrace.convert.source import AttributeValue, BBox, FieldInfo, Piece, SourceFrame, bad_data, open_error

__all__ = ["Centering", "BovHeader", "BovSource", "parse_bov_header", "open_bov", "looks_like_bov_header", "DATA_FORMATS"]

# BOV DATA_FORMAT -> element type (byte order applied from DATA_ENDIAN).
DATA_FORMATS: dict[str, np.dtype] = {
    "BYTE": np.dtype("u1"),
    "SHORT": np.dtype("i2"),
    "INT": np.dtype("i4"),
    "FLOAT": np.dtype("f4"),
    "DOUBLE": np.dtype("f8"),
}
# Bytes of values converted and written at a time (bounds the memory a frame needs).
_SLICE_BYTES = 32 << 20


class Centering(Enum):
    """Where the values sit: on the grid's nodes or at its cells' centres."""

    NODAL = "nodal"
    ZONAL = "zonal"


@dataclass(frozen=True)
class BovHeader:
    """One parsed BOV header; ``line_offsets`` maps each key given to the byte offset of its line."""

    path: Path
    data_file: Path
    dims: tuple[int, int, int]
    dtype: np.dtype
    components: int
    variable: str
    centering: Centering
    brick_origin: tuple[float, float, float]
    brick_size: tuple[float, float, float]
    byte_offset: int
    time: float | None
    line_offsets: dict[str, int] = field(default_factory=dict)

    @property
    def elements(self) -> int:
        return self.dims[0] * self.dims[1] * self.dims[2]

    @property
    def data_bytes(self) -> int:
        return self.elements * self.components * self.dtype.itemsize

    def grid_spacing(self) -> tuple[float, float, float]:
        """Distance between neighbouring values: nodal ``size / (dims - 1)``, zonal ``size / dims``."""
        if self.centering is Centering.ZONAL:
            return tuple(s / d for s, d in zip(self.brick_size, self.dims))  # type: ignore[return-value]
        return tuple(s / (d - 1) if d > 1 else s for s, d in zip(self.brick_size, self.dims))  # type: ignore[return-value]

    def grid_origin(self) -> tuple[float, float, float]:
        """Position of value (0, 0, 0): the brick origin, or the first cell's centre when zonal."""
        if self.centering is Centering.ZONAL:
            return tuple(o + h / 2 for o, h in zip(self.brick_origin, self.grid_spacing()))  # type: ignore[return-value]
        return self.brick_origin

    def bbox(self) -> BBox:
        low = self.brick_origin
        return (low, tuple(o + s for o, s in zip(low, self.brick_size)))  # type: ignore[return-value]


def looks_like_bov_header(head: bytes) -> bool:
    """Whether a file's first bytes read as a BOV header: text (no NUL byte) with a ``DATA_FILE`` key."""
    return b"DATA_FILE" in head.upper() and b"\0" not in head


def parse_bov_header(path: os.PathLike | str) -> BovHeader:
    """Parse one BOV header; raises ``CorruptIndexError`` naming the line's offset for a bad or missing key."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise open_error(path, error) from error
    values: dict[str, str] = {}
    offsets: dict[str, int] = {}
    position = 0
    for line in raw.splitlines(keepends=True):
        offset, position = position, position + len(line)
        text = line.decode("latin-1").strip()
        if not text or text.startswith("#"):
            continue
        key, colon, value = text.partition(":")
        if not colon:
            raise bad_data(errors.CorruptIndexError, path, offset, "a 'KEY: value' line", repr(text[:60]))
        key = key.strip().upper()
        values[key] = value.strip()
        offsets[key] = offset

    def number_list(key: str, kind: type, default: tuple | None) -> tuple:
        if key not in values:
            if default is None:
                raise bad_data(errors.CorruptIndexError, path, len(raw), f"a {key} line", "none")
            return default
        try:
            parsed = tuple(kind(part) for part in values[key].split())
        except ValueError:
            parsed = ()
        if len(parsed) != 3:
            raise bad_data(
                errors.CorruptIndexError, path, offsets[key], f"{key} as three {kind.__name__} values",
                repr(values[key]),
            )
        return parsed

    def single(key: str, kind: type, default: object) -> object:
        if key not in values:
            return default
        try:
            return kind(values[key])
        except ValueError:
            raise bad_data(
                errors.CorruptIndexError, path, offsets[key], f"{key} as one {kind.__name__}", repr(values[key])
            ) from None

    def choice(key: str, options: Sequence[str], default: str | None) -> str:
        if key not in values:
            if default is None:
                raise bad_data(errors.CorruptIndexError, path, len(raw), f"a {key} line", "none")
            return default
        word = values[key].upper()
        if word not in options:
            raise bad_data(
                errors.CorruptIndexError, path, offsets[key], f"{key} one of {', '.join(options)}", repr(values[key])
            )
        return word

    if not values.get("DATA_FILE"):
        where = offsets.get("DATA_FILE", len(raw))
        raise bad_data(errors.CorruptIndexError, path, where, "a DATA_FILE line naming the data file", "none")
    dims = number_list("DATA_SIZE", int, None)
    if min(dims) < 1:
        raise bad_data(
            errors.CorruptIndexError, path, offsets["DATA_SIZE"], "DATA_SIZE of three positive integers",
            repr(values["DATA_SIZE"]),
        )
    dtype = DATA_FORMATS[choice("DATA_FORMAT", tuple(DATA_FORMATS), None)]
    endian = choice("DATA_ENDIAN", ("LITTLE", "BIG"), "LITTLE")
    dtype = dtype.newbyteorder("<" if endian == "LITTLE" else ">")
    components_text = values.get("DATA_COMPONENTS", "1")
    components = 2 if components_text.upper() == "COMPLEX" else single("DATA_COMPONENTS", int, 1)
    if not isinstance(components, int) or components < 1:
        raise bad_data(
            errors.CorruptIndexError, path, offsets["DATA_COMPONENTS"], "DATA_COMPONENTS >= 1 or COMPLEX",
            repr(components_text),
        )
    byte_offset = single("BYTE_OFFSET", int, 0)
    if not isinstance(byte_offset, int) or byte_offset < 0:
        raise bad_data(
            errors.CorruptIndexError, path, offsets["BYTE_OFFSET"], "BYTE_OFFSET >= 0", repr(values["BYTE_OFFSET"])
        )
    time = single("TIME", float, None)
    return BovHeader(
        path=path,
        data_file=path.parent / values["DATA_FILE"],
        dims=dims,  # type: ignore[arg-type]
        dtype=dtype,
        components=components,
        variable=values.get("VARIABLE") or "var",
        centering=Centering(choice("CENTERING", ("NODAL", "ZONAL"), "NODAL").lower()),
        brick_origin=number_list("BRICK_ORIGIN", float, (0.0, 0.0, 0.0)),  # type: ignore[arg-type]
        brick_size=number_list("BRICK_SIZE", float, (1.0, 1.0, 1.0)),  # type: ignore[arg-type]
        byte_offset=byte_offset,
        time=time,  # type: ignore[arg-type]
        line_offsets=offsets,
    )


class BovSource:
    """Opened and checked BOV headers (one frame each); see :func:`open_bov`."""

    def __init__(self, headers: list[BovHeader]) -> None:
        first = headers[0]
        self.headers = headers
        self.path = first.path
        self.frame_count = len(headers)
        self.total_bytes = sum(header.data_bytes for header in headers)
        self.fields = [FieldInfo(first.variable, np.dtype(first.dtype.name), first.components)]
        self.attributes: dict[str, AttributeValue] = {
            "source_format": "bov",
            "source_path": os.fspath(first.path),
            "grid_dims": list(first.dims),
            "grid_origin": list(first.grid_origin()),
            "grid_spacing": list(first.grid_spacing()),
            "layout": "linear",
            "bov_centering": first.centering.value,
        }

    def frames(self) -> Iterator[SourceFrame]:
        for index, header in enumerate(self.headers):
            time = header.time if header.time is not None else float(index)
            yield SourceFrame(time=time, bbox=header.bbox(), pieces=_slices(header))


def _slices(header: BovHeader) -> Iterator[Piece]:
    """The header's values in native byte order, a bounded number of bytes at a time."""
    native = np.dtype(header.dtype.name)
    values = np.memmap(
        header.data_file, dtype=header.dtype, mode="r", offset=header.byte_offset,
        shape=(header.elements, header.components),
    )
    step = max(1, _SLICE_BYTES // (header.components * header.dtype.itemsize))
    for start in range(0, header.elements, step):
        part = values[start : start + step]
        yield Piece(header.variable, np.asarray(part, dtype=native), part.nbytes)
    del values


def open_bov(paths: Sequence[os.PathLike | str]) -> BovSource:
    """Parse every header, check that they agree and that each data file holds its values.

    Raises ``CorruptIndexError`` (bad or missing header key, headers that disagree), ``FileOpenError``
    (a header or data file that cannot be opened) or ``TruncatedFileError`` (a data file too short).
    """
    if not paths:
        raise errors.UsageError("no BOV headers given")
    headers = [parse_bov_header(path) for path in paths]
    first = headers[0]
    for header in headers[1:]:
        for key, value, expected in (
            ("VARIABLE", header.variable, first.variable),
            ("DATA_SIZE", header.dims, first.dims),
            ("DATA_FORMAT", header.dtype.name, first.dtype.name),
            ("DATA_COMPONENTS", header.components, first.components),
            ("CENTERING", header.centering.value, first.centering.value),
            ("BRICK_ORIGIN", header.brick_origin, first.brick_origin),
            ("BRICK_SIZE", header.brick_size, first.brick_size),
        ):
            if value != expected:
                raise bad_data(
                    errors.CorruptIndexError, header.path, header.line_offsets.get(key, 0),
                    f"{key} {_show(expected)} as in {first.path}", _show(value),
                )
    for header in headers:
        try:
            size = header.data_file.stat().st_size
            with open(header.data_file, "rb"):
                pass
        except OSError as error:
            raise open_error(header.data_file, error) from error
        if size < header.byte_offset + header.data_bytes:
            raise bad_data(
                errors.TruncatedFileError, header.data_file, header.byte_offset,
                f"{header.data_bytes} bytes of values (DATA_SIZE {_show(header.dims)} x {header.components} "
                f"components x {header.dtype.itemsize} bytes, from {header.path})",
                f"{max(size - header.byte_offset, 0)} bytes",
            )
    return BovSource(headers)


def _show(value: object) -> str:
    if isinstance(value, tuple):
        return " ".join(str(v) for v in value)
    return str(value)
