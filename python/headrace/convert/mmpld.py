"""MegaMol MMPLD particle files, versions 1.0 to 1.3, read as MegaMol's own ``MMPLDDataSource`` reads them.

Layout (little-endian), verified against MegaMol's ``plugins/moldyn/src/io/MMPLDDataSource.cpp`` and
``MMPLDWriter.cpp``, its specification ``docs/mmpld/SpecMMPLD.docx``, ``utils/MMPLD/mmpldinfo.py`` and
the VISUS ``mmpld`` library (docs/converters.md):

- file header (60 bytes): magic ``"MMPLD\\0"``, u16 version (100, 101, 102, 103 for 1.0 to 1.3),
  u32 frame count (>= 1), f32[6] bounding box, f32[6] clipping box;
- seek table: u64 offsets, one per frame; MegaMol (and the specification) add one more, the end of the
  data, the ``mmpld`` library does not. Frame 0 starts right after the table, so where it starts says
  which of the two a file has;
- frame: f32 timestamp (1.2 and later), u32 list count (0 allowed), then the lists;
- list: u8 vertex type, u8 colour type; f32 global radius (vertex types 1, 3, 4); u8[4] global RGBA
  (colour type 0); f32[2] intensity range (colour types 3, 7); u64 particle count; f32[6] list bounding
  box (1.3); the interleaved particles (vertex data, then colour data; nothing when the vertex type is
  0); in 1.1 a cluster-info block (u32 cluster count, u64 byte count, that many bytes).

Two historical deviations are recognised on the first frame and then required of every frame: 1.3 files
without frame timestamps (MegaMol's writer before commit fc4e784 tested ``== 102``) and 1.1 files without
cluster-info blocks (MegaMol's writer built without ``WITH_CLUSTERINFO``). The layout used is recorded in
the ``mmpld_layout`` attribute, the seek table's in ``mmpld_seek_table``. A frame without particles
becomes an empty frame (zero elements of every field).
"""

from __future__ import annotations

import math
import mmap
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

import numpy as np

from headrace import errors
from headrace.convert.source import AttributeValue, BBox, FieldInfo, Piece, SourceFrame, bad_data, open_error

__all__ = ["VertexType", "ColourType", "MmpldSource", "open_mmpld", "has_mmpld_magic", "MAGIC", "VERSIONS"]

MAGIC = b"MMPLD\0"
VERSIONS = (100, 101, 102, 103)


def has_mmpld_magic(head: bytes) -> bool:
    """Whether a file's first bytes are an MMPLD file's."""
    return head.startswith(MAGIC)


_FILE_HEADER = struct.Struct("<6sHI6f6f")  # 60 bytes
# Particles converted at a time (bounds the temporaries of the colour and type conversions).
_SLICE_PARTICLES = 1 << 20


class VertexType(IntEnum):
    """MMPLD per-particle position data (``VERTDATA_*``)."""

    NONE = 0
    FLOAT_XYZ = 1
    FLOAT_XYZR = 2
    SHORT_XYZ = 3
    DOUBLE_XYZ = 4


class ColourType(IntEnum):
    """MMPLD per-particle colour data (``COLDATA_*``)."""

    NONE = 0
    UINT8_RGB = 1
    UINT8_RGBA = 2
    FLOAT_I = 3
    FLOAT_RGB = 4
    FLOAT_RGBA = 5
    USHORT_RGBA = 6
    DOUBLE_I = 7


# (NumPy dtype of one value, values per particle). SHORT_XYZ is unsigned, as the specification,
# MegaMol's particle accessor and mmpldinfo.py read it (the mmpld library alone says int16_t).
_VERTEX_VALUES: dict[VertexType, tuple[np.dtype, int]] = {
    VertexType.FLOAT_XYZ: (np.dtype("<f4"), 3),
    VertexType.FLOAT_XYZR: (np.dtype("<f4"), 4),
    VertexType.SHORT_XYZ: (np.dtype("<u2"), 3),
    VertexType.DOUBLE_XYZ: (np.dtype("<f8"), 3),
}
_COLOUR_VALUES: dict[ColourType, tuple[np.dtype, int]] = {
    ColourType.UINT8_RGB: (np.dtype("u1"), 3),
    ColourType.UINT8_RGBA: (np.dtype("u1"), 4),
    ColourType.FLOAT_I: (np.dtype("<f4"), 1),
    ColourType.FLOAT_RGB: (np.dtype("<f4"), 3),
    ColourType.FLOAT_RGBA: (np.dtype("<f4"), 4),
    ColourType.USHORT_RGBA: (np.dtype("<u2"), 4),
    ColourType.DOUBLE_I: (np.dtype("<f8"), 1),
}
_INTENSITY_TYPES = (ColourType.FLOAT_I, ColourType.DOUBLE_I)
# Integer colour channels are divided by their maximum to land in [0, 1].
_COLOUR_SCALE = {np.dtype("u1"): 255.0, np.dtype("<u2"): 65535.0}


@dataclass(frozen=True)
class Layout:
    """Which optional per-frame and per-list blocks a file's frames contain."""

    frame_timestamps: bool
    cluster_info: bool
    note: str


_LAYOUTS = {
    100: (Layout(False, False, "1.0"),),
    101: (
        Layout(False, True, "1.1 with cluster-info blocks"),
        Layout(False, False, "1.1 without cluster-info blocks (MegaMol writer built without WITH_CLUSTERINFO)"),
    ),
    102: (Layout(True, False, "1.2"),),
    103: (
        Layout(True, False, "1.3"),
        Layout(False, False, "1.3 without frame timestamps (MegaMol writer before commit fc4e784)"),
    ),
}


@dataclass(frozen=True)
class ListHeader:
    """One particle list of a frame, as parsed from its header."""

    offset: int
    vertex_type: VertexType
    colour_type: ColourType
    global_radius: float
    global_colour: tuple[int, int, int, int]
    intensity_range: tuple[float, float]
    count: int
    data_offset: int

    @property
    def has_positions(self) -> bool:
        return self.vertex_type != VertexType.NONE

    @property
    def stride(self) -> int:
        """Bytes per particle; MegaMol stores no particle data for vertex type NONE."""
        if not self.has_positions:
            return 0
        stride = _value_bytes(_VERTEX_VALUES[self.vertex_type])
        if self.colour_type != ColourType.NONE:
            stride += _value_bytes(_COLOUR_VALUES[self.colour_type])
        return stride

    @property
    def particles(self) -> int:
        """Particles this list contributes to the output (none without positions)."""
        return self.count if self.has_positions else 0


@dataclass(frozen=True)
class FrameHeader:
    """One frame: where it is, its timestamp (``None`` before 1.2) and its lists."""

    index: int
    offset: int
    end: int
    timestamp: float | None
    lists: tuple[ListHeader, ...]

    @property
    def particles(self) -> int:
        return sum(entry.particles for entry in self.lists)


@dataclass(frozen=True)
class SeekTable:
    """Where each frame starts and ends, and which writer's seek-table layout said so.

    ``layout`` is ``"megamol"`` (frame count + 1 offsets, the last one the end of the data: MegaMol's
    writer and the specification) or ``"library"`` (one offset per frame: the VISUS ``mmpld`` library;
    the last frame ends at the end of the file).
    """

    layout: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]

    def end_origin(self, index: int) -> str:
        """What fixes frame ``index``'s end, for messages."""
        return "the end of the file" if self.ends_at_file_end(index) else "the seek table"

    def ends_at_file_end(self, index: int) -> bool:
        """Whether only the file's end says where frame ``index`` ends (a library table's last frame)."""
        return self.layout == "library" and index == len(self.starts) - 1


class _Mismatch(Exception):
    """A frame does not parse under a layout (internal; becomes ``CorruptIndexError``, or
    ``TruncatedFileError`` where a frame runs past the file's end that is its only end)."""

    def __init__(self, offset: int, expected: str, found: str, truncated: bool = False) -> None:
        super().__init__(offset, expected, found)
        self.offset, self.expected, self.found, self.truncated = offset, expected, found, truncated


class MmpldSource:
    """An opened, fully checked MMPLD file; see :func:`open_mmpld`."""

    def __init__(
        self,
        path: Path,
        version: int,
        bbox: BBox,
        clip_box: BBox,
        layout: Layout,
        seek_table: SeekTable,
        frame_headers: list[FrameHeader],
    ) -> None:
        self.path = path
        self.version = version
        self.bbox = bbox
        self.clip_box = clip_box
        self.layout = layout
        self.seek_table = seek_table
        self.frame_headers = frame_headers
        self.frame_count = len(frame_headers)
        self.total_bytes = sum(entry.particles * entry.stride for frame in frame_headers for entry in frame.lists)
        self.has_intensity = any(
            entry.has_positions and entry.colour_type in _INTENSITY_TYPES
            for frame in frame_headers
            for entry in frame.lists
        )
        self.fields = [FieldInfo("particles", np.dtype("float32"), 8)]
        if self.has_intensity:
            self.fields.append(FieldInfo("intensity", np.dtype("float32"), 1))
        self.attributes: dict[str, AttributeValue] = {
            "source_format": "mmpld",
            "source_path": os.fspath(path),
            "mmpld_version": version,
            "mmpld_layout": layout.note,
            "mmpld_seek_table": seek_table.layout,
            "clip_box": [*clip_box[0], *clip_box[1]],
        }

    def frames(self) -> Iterator[SourceFrame]:
        for header in self.frame_headers:
            time = header.timestamp if header.timestamp is not None else float(header.index)
            yield SourceFrame(time=time, bbox=self.bbox, pieces=self._pieces(header))

    def _pieces(self, header: FrameHeader) -> Iterator[Piece]:
        """The frame's particles, then its intensities; one zero-length piece of each for an empty frame."""
        if header.particles == 0:
            yield Piece("particles", np.empty((0, 8), dtype=np.float32), 0)
            if self.has_intensity:
                yield Piece("intensity", np.empty((0, 1), dtype=np.float32), 0)
            return
        # One frame mapped at a time, unmapped after it: the pages it touched leave the process with it,
        # so a file larger than memory converts without the whole of it counted as this process's.
        data = _FrameBytes(np.memmap(self.path, dtype=np.uint8, mode="r", offset=header.offset,
                                     shape=(header.end - header.offset,)), header.offset)
        yield from _particle_pieces(data, header)
        if self.has_intensity:
            yield from _intensity_pieces(data, header)


def _particle_pieces(data: _FrameBytes, header: FrameHeader) -> Iterator[Piece]:
    """Field ``particles`` of one frame, list by list, slice by slice."""
    for entry in header.lists:
        if entry.particles == 0:
            continue
        records = _records(data, entry)
        grey_range = _grey_range(entry, records) if entry.colour_type in _INTENSITY_TYPES else None
        for start in range(0, entry.count, _SLICE_PARTICLES):
            part = records[start : start + _SLICE_PARTICLES]
            rows = np.empty((part.shape[0], 8), dtype=np.float32)
            _convert_records(entry, part, rows, grey_range)
            yield Piece("particles", rows, part.shape[0] * entry.stride)


def _intensity_pieces(data: _FrameBytes, header: FrameHeader) -> Iterator[Piece]:
    """Field ``intensity`` of one frame: a second pass over its lists, NaN for lists without one."""
    for entry in header.lists:
        if entry.particles == 0:
            continue
        records = _records(data, entry) if entry.colour_type in _INTENSITY_TYPES else None
        for start in range(0, entry.count, _SLICE_PARTICLES):
            stop = min(start + _SLICE_PARTICLES, entry.count)
            values = np.full((stop - start, 1), np.nan, dtype=np.float32)
            if records is not None:
                values[:, 0] = records["c"][start:stop, 0]
            yield Piece("intensity", values, 0)


def open_mmpld(path: os.PathLike | str) -> MmpldSource:
    """Parse and check an MMPLD file's header, seek table and every frame's list headers.

    Raises ``TruncatedFileError`` (file shorter than its header or seek table says), ``BadMagicError``,
    ``UnsupportedVersionError`` or ``CorruptIndexError`` (a seek table of neither layout or out of order,
    unknown vertex or colour type, a frame whose lists do not end where the seek table or the file's end
    says); each message names the file, the offset and what was expected. Frames without particles are
    kept: they become empty frames.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        handle = open(path, "rb")
    except OSError as error:
        raise open_error(path, error) from error
    with handle:
        head = handle.read(_FILE_HEADER.size)
        if head[: len(MAGIC)] != MAGIC[: len(head)]:
            raise bad_data(errors.BadMagicError, path, 0, "the MMPLD magic 'MMPLD\\0'", repr(head[: len(MAGIC)]))
        if size < _FILE_HEADER.size:
            raise bad_data(
                errors.TruncatedFileError, path, 0, f"a {_FILE_HEADER.size}-byte MMPLD file header", f"{size} bytes"
            )
        _, version, frame_count, *boxes = _FILE_HEADER.unpack(head)
        if version not in VERSIONS:
            note = " (MegaMol writes 0 until the file is complete)" if version == 0 else ""
            raise bad_data(
                errors.UnsupportedVersionError, path, 6, "version 100, 101, 102 or 103 (MMPLD 1.0 to 1.3)",
                f"{version}{note}",
            )
        if frame_count == 0:
            raise bad_data(errors.CorruptIndexError, path, 8, "a frame count of at least 1", "0")
        seek_table = _read_seek_table(handle, path, size, frame_count)
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buffer:
            layout, frame_headers = _parse_frames(buffer, path, version, seek_table)
    bbox = (tuple(boxes[0:3]), tuple(boxes[3:6]))
    clip_box = (tuple(boxes[6:9]), tuple(boxes[9:12]))
    return MmpldSource(path, version, bbox, clip_box, layout, seek_table, frame_headers)  # type: ignore[arg-type]


def _read_seek_table(handle, path: Path, size: int, frame_count: int) -> SeekTable:
    """Read the seek table in the layout that frame 0's offset implies, and check it against the file."""
    table_start = _FILE_HEADER.size
    library_end = table_start + 8 * frame_count  # one offset per frame
    megamol_end = library_end + 8  # and the end of the data
    first = handle.read(8)
    if len(first) < 8:
        raise bad_data(
            errors.TruncatedFileError, path, table_start,
            f"a seek table of {frame_count} or {frame_count + 1} u64 offsets", f"{len(first)} bytes",
        )
    (frame_0,) = struct.unpack("<Q", first)
    # The library writes frame 0 right after its table; MegaMol too, though its reader and mmpldinfo.py
    # tolerate unused bytes in between, so a later start is read as MegaMol's layout.
    if frame_0 == library_end:
        layout, entries = "library", frame_count
    elif frame_0 >= megamol_end:
        layout, entries = "megamol", frame_count + 1
    else:
        raise bad_data(
            errors.CorruptIndexError, path, table_start,
            f"frame 0 to start right after the seek table: at offset {library_end} (one offset per frame, "
            f"as the mmpld library writes) or at offset {megamol_end} or later (frames + 1 offsets, as MegaMol writes)",
            f"offset {frame_0}",
        )
    rest = handle.read(8 * (entries - 1))
    if 8 + len(rest) < 8 * entries:
        raise bad_data(
            errors.TruncatedFileError, path, table_start,
            f"a seek table of {entries} u64 offsets ({8 * entries} bytes, as frame 0's offset {frame_0} implies)",
            f"{8 + len(rest)} bytes",
        )
    table = [frame_0, *(int(value) for value in np.frombuffer(rest, dtype="<u8"))]
    for index in range(entries - 1):
        if table[index + 1] < table[index]:
            raise bad_data(
                errors.CorruptIndexError, path, table_start + 8 * (index + 1),
                f"seek table entry {index + 1} >= {table[index]} (offsets never decrease)", str(table[index + 1]),
            )
    starts = tuple(table[:frame_count])
    ends = tuple(table[1:]) if layout == "megamol" else (*table[1:], size)
    for index in range(frame_count):
        if ends[index] > size:
            raise bad_data(
                errors.TruncatedFileError, path, starts[index],
                f"frame {index} of {ends[index] - starts[index]} bytes (to offset {ends[index]})",
                f"the file ends at offset {size}",
            )
    if layout == "megamol" and table[frame_count] != size:
        raise bad_data(
            errors.CorruptIndexError, path, table[frame_count],
            "the end of the file (the seek table's last offset)", f"{size - table[frame_count]} more bytes",
        )
    return SeekTable(layout, starts, ends)


def _parse_frames(
    buffer: mmap.mmap, path: Path, version: int, seek_table: SeekTable
) -> tuple[Layout, list[FrameHeader]]:
    """Every frame's header under the first layout of this version that parses every frame exactly.

    Every frame, not frame 0 alone: a frame without lists reads the same with or without 1.1's
    cluster-info blocks. When no layout fits, the mismatch found furthest into the file is reported.
    """
    furthest: tuple[int, _Mismatch] | None = None
    for layout in _LAYOUTS[version]:
        frame_headers: list[FrameHeader] = []
        try:
            for index in range(len(seek_table.starts)):
                frame_headers.append(_parse_frame(buffer, version, layout, seek_table, index))
            return layout, frame_headers
        except _Mismatch as mismatch:
            if furthest is None or len(frame_headers) > furthest[0]:
                furthest = (len(frame_headers), mismatch)
    assert furthest is not None
    reported = furthest[1]
    kind = errors.TruncatedFileError if reported.truncated else errors.CorruptIndexError
    raise bad_data(kind, path, reported.offset, reported.expected, reported.found)


def _parse_frame(buffer: mmap.mmap, version: int, layout: Layout, seek_table: SeekTable, index: int) -> FrameHeader:
    start, end = seek_table.starts[index], seek_table.ends[index]
    cursor = _Cursor(buffer, start, end, index, seek_table.ends_at_file_end(index))
    timestamp = cursor.take("<f", "the frame timestamp")[0] if layout.frame_timestamps else None
    (list_count,) = cursor.take("<I", "the list count")
    lists = []
    for list_index in range(list_count):
        offset = cursor.position
        vertex_code, colour_code = cursor.take("<BB", f"the types of list {list_index}")
        if vertex_code not in VertexType._value2member_map_:
            raise _Mismatch(offset, "a vertex type 0..4", str(vertex_code))
        if colour_code not in ColourType._value2member_map_:
            raise _Mismatch(offset + 1, "a colour type 0..7", str(colour_code))
        vertex_type, colour_type = VertexType(vertex_code), ColourType(colour_code)
        # Which header fields follow depends on the raw type codes, as in MegaMol's MMPLDDataSource.
        global_radius = 0.05  # MegaMol's value when the list carries none
        if vertex_type in (VertexType.FLOAT_XYZ, VertexType.SHORT_XYZ, VertexType.DOUBLE_XYZ):
            (global_radius,) = cursor.take("<f", "the global radius")
        global_colour = (255, 255, 255, 255)
        intensity_range = (0.0, 1.0)
        if colour_type == ColourType.NONE:
            global_colour = cursor.take("<4B", "the global colour")
        elif colour_type in _INTENSITY_TYPES:
            intensity_range = cursor.take("<2f", "the intensity range")
        (count,) = cursor.take("<Q", "the particle count")
        if version >= 103:
            cursor.take("<6f", "the list bounding box")
        entry = ListHeader(
            offset, vertex_type, colour_type, float(global_radius), tuple(global_colour),  # type: ignore[arg-type]
            (float(intensity_range[0]), float(intensity_range[1])), int(count), cursor.position,
        )
        cursor.skip(entry.count * entry.stride, f"{entry.count} particles of {entry.stride} bytes")
        if layout.cluster_info:
            _, cluster_bytes = cursor.take("<IQ", "the cluster-info header")
            cursor.skip(cluster_bytes, "the cluster-info data")
        lists.append(entry)
    if cursor.position != end:
        raise _Mismatch(
            cursor.position, f"frame {index} to end at offset {end} ({seek_table.end_origin(index)})",
            f"its {list_count} lists end at offset {cursor.position}",
        )
    return FrameHeader(index, start, end, timestamp, tuple(lists))


class _Cursor:
    """Reads little-endian values of one frame, never past the frame's end.

    ``file_end``: the frame's end is the file's end and nothing else says where it is, so a frame that
    needs more bytes is a truncated file.
    """

    def __init__(self, buffer: mmap.mmap, start: int, end: int, frame: int, file_end: bool) -> None:
        self.buffer, self.position, self.end, self.frame, self.file_end = buffer, start, end, frame, file_end

    def take(self, fmt: str, what: str) -> tuple:
        size = struct.calcsize(fmt)
        self._need(size, what)
        values = struct.unpack_from(fmt, self.buffer, self.position)
        self.position += size
        return values

    def skip(self, size: int, what: str) -> None:
        self._need(size, what)
        self.position += size

    def _need(self, size: int, what: str) -> None:
        if self.position + size > self.end:
            end = "the end of the file" if self.file_end else "the frame's end"
            raise _Mismatch(
                self.position, f"{what} ({size} bytes) inside frame {self.frame}",
                f"{self.end - self.position} bytes left before {end} at offset {self.end}", self.file_end,
            )


def _value_bytes(values: tuple[np.dtype, int]) -> int:
    dtype, count = values
    return dtype.itemsize * count


def _record_dtype(entry: ListHeader) -> np.dtype:
    """Packed structured dtype of one interleaved particle: ``v`` (vertex values), ``c`` (colour values)."""
    vertex_dtype, vertex_count = _VERTEX_VALUES[entry.vertex_type]
    parts = [("v", vertex_dtype, (vertex_count,))]
    if entry.colour_type != ColourType.NONE:
        colour_dtype, colour_count = _COLOUR_VALUES[entry.colour_type]
        parts.append(("c", colour_dtype, (colour_count,)))
    return np.dtype(parts)


def _convert_records(
    entry: ListHeader, records: np.ndarray, rows: np.ndarray, grey_range: tuple[float, float] | None
) -> None:
    """Fill ``rows`` (n x 8 float32: x, y, z, radius, r, g, b, a) from ``n`` particle records."""
    vertices = records["v"]
    rows[:, 0:3] = vertices[:, 0:3]
    rows[:, 3] = vertices[:, 3] if entry.vertex_type == VertexType.FLOAT_XYZR else entry.global_radius
    if entry.colour_type == ColourType.NONE:
        rows[:, 4:8] = np.asarray(entry.global_colour, dtype=np.float32) / np.float32(255.0)
    elif grey_range is not None:
        # In float64 whatever the intensity's type, rounded to float32 once.
        values = records["c"][:, 0].astype(np.float64)
        low, high = grey_range
        rows[:, 4:7] = np.clip((values - low) / (high - low), 0.0, 1.0)[:, None] if high > low else 0.5
        rows[:, 7] = 1.0
    else:
        colours = records["c"]
        channels = colours.shape[1]
        scale = _COLOUR_SCALE.get(colours.dtype)
        rows[:, 4 : 4 + channels] = colours / np.float32(scale) if scale else colours
        if channels == 3:
            rows[:, 7] = 1.0


def _grey_range(entry: ListHeader, records: np.ndarray) -> tuple[float, float]:
    """The intensity range mapped to grey 0..1: the header's, or the list's own when that one is empty."""
    low, high = entry.intensity_range
    if high > low:
        return low, high
    low, high = math.inf, -math.inf
    for start in range(0, entry.count, _SLICE_PARTICLES):
        values = records["c"][start : start + _SLICE_PARTICLES, 0]
        finite = values[np.isfinite(values)]
        if finite.size:
            low, high = min(low, float(finite.min())), max(high, float(finite.max()))
    return (low, high) if low <= high else (0.0, 0.0)


@dataclass(frozen=True)
class _FrameBytes:
    """A frame's bytes, mapped, and the file offset they start at."""

    bytes: np.ndarray
    start: int


def _records(data: _FrameBytes, entry: ListHeader) -> np.ndarray:
    """A list's particles as a structured view of the mapped frame (nothing read yet)."""
    begin = entry.data_offset - data.start
    return data.bytes[begin : begin + entry.count * entry.stride].view(_record_dtype(entry))
