"""Write MegaMol MMPLD particle files (versions 1.0 to 1.3) from the format's specification, for tests.

Written independently of the converter's reader, from MegaMol's ``MMPLDWriter.cpp`` /
``MMPLDDataSource.cpp``, its specification and the VISUS ``mmpld`` library (docs/converters.md lists
them). All values are little-endian. Unlike MegaMol's own writer this one writes every vertex and colour
type as given (MegaMol upgrades UINT8_RGB to UINT8_RGBA and re-types colours next to DOUBLE_XYZ), so that
a reader can be tested on every type the format defines. ``layout`` picks the seek table: MegaMol's
(frame count + 1 offsets, the last one the end of the data) or the ``mmpld`` library's (one offset per
frame, frame 0 right after it).

>>> lists = [ParticleList(VertexType.FLOAT_XYZR, ColourType.UINT8_RGBA, vertices, colours)]
>>> write_mmpld(path, [MmpldFrame(lists, timestamp=0.5)], version=103, layout="library")
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Literal

import numpy as np

__all__ = [
    "VertexType",
    "ColourType",
    "ParticleList",
    "MmpldFrame",
    "write_mmpld",
    "VERTEX_VALUES",
    "COLOUR_VALUES",
    "random_list",
    "SeekTableLayout",
]

SeekTableLayout = Literal["megamol", "library"]


class VertexType(IntEnum):
    """``VERTDATA_*``: what each particle's position record holds."""

    NONE = 0
    FLOAT_XYZ = 1
    FLOAT_XYZR = 2
    SHORT_XYZ = 3
    DOUBLE_XYZ = 4


class ColourType(IntEnum):
    """``COLDATA_*``: what each particle's colour record holds."""

    NONE = 0
    UINT8_RGB = 1
    UINT8_RGBA = 2
    FLOAT_I = 3
    FLOAT_RGB = 4
    FLOAT_RGBA = 5
    USHORT_RGBA = 6
    DOUBLE_I = 7


# (value dtype, values per particle) of each record type.
VERTEX_VALUES: dict[VertexType, tuple[np.dtype, int]] = {
    VertexType.NONE: (np.dtype("<f4"), 0),
    VertexType.FLOAT_XYZ: (np.dtype("<f4"), 3),
    VertexType.FLOAT_XYZR: (np.dtype("<f4"), 4),
    VertexType.SHORT_XYZ: (np.dtype("<u2"), 3),  # unsigned, as the specification says
    VertexType.DOUBLE_XYZ: (np.dtype("<f8"), 3),
}
COLOUR_VALUES: dict[ColourType, tuple[np.dtype, int]] = {
    ColourType.NONE: (np.dtype("u1"), 0),
    ColourType.UINT8_RGB: (np.dtype("u1"), 3),
    ColourType.UINT8_RGBA: (np.dtype("u1"), 4),
    ColourType.FLOAT_I: (np.dtype("<f4"), 1),
    ColourType.FLOAT_RGB: (np.dtype("<f4"), 3),
    ColourType.FLOAT_RGBA: (np.dtype("<f4"), 4),
    ColourType.USHORT_RGBA: (np.dtype("<u2"), 4),
    ColourType.DOUBLE_I: (np.dtype("<f8"), 1),
}


@dataclass
class ParticleList:
    """One particle list: types, per-particle arrays and the header values that stand in for them.

    ``vertices`` is ``(n, 3)`` or ``(n, 4)`` (FLOAT_XYZR), cast to the vertex type's dtype on write;
    ``colours`` is ``(n, channels)`` or ``None`` for ColourType.NONE. With VertexType.NONE no particle
    data is written (as MegaMol does) and ``count`` gives the header's particle count.
    """

    vertex_type: VertexType
    colour_type: ColourType
    vertices: np.ndarray | None = None
    colours: np.ndarray | None = None
    global_radius: float = 0.5
    global_colour: tuple[int, int, int, int] = (255, 255, 255, 255)
    intensity_range: tuple[float, float] = (0.0, 1.0)
    bbox: tuple[float, float, float, float, float, float] = (0.0, 0.0, 0.0, 1.0, 1.0, 1.0)
    cluster_info: bytes = b""
    cluster_count: int = 0
    count: int | None = None

    @property
    def particle_count(self) -> int:
        if self.count is not None:
            return self.count
        return 0 if self.vertices is None else int(self.vertices.shape[0])


@dataclass
class MmpldFrame:
    """One frame: its lists in order and its timestamp (written by 1.2 and later)."""

    lists: Sequence[ParticleList]
    timestamp: float = 0.0


def write_mmpld(
    path: os.PathLike | str,
    frames: Sequence[MmpldFrame],
    *,
    version: int = 103,
    bbox: tuple[float, float, float, float, float, float] = (0.0, 0.0, 0.0, 1.0, 1.0, 1.0),
    clip_box: tuple[float, float, float, float, float, float] | None = None,
    frame_timestamps: bool | None = None,
    cluster_info: bool | None = None,
    layout: SeekTableLayout = "megamol",
) -> Path:
    """Write an MMPLD file and return its path.

    ``frame_timestamps`` (default: version >= 102) and ``cluster_info`` (default: version == 101) can
    be overridden to produce the variants old MegaMol writers left behind (1.3 without timestamps, 1.1
    without cluster-info blocks). ``layout="library"`` writes the seek table as the ``mmpld`` library
    does: no end offset.
    """
    if version not in (100, 101, 102, 103):
        raise ValueError(f"MMPLD version must be 100..103, got {version}")
    if layout not in ("megamol", "library"):
        raise ValueError(f"seek-table layout must be 'megamol' or 'library', got {layout!r}")
    timestamps = version >= 102 if frame_timestamps is None else frame_timestamps
    clusters = version == 101 if cluster_info is None else cluster_info
    body = [_frame_bytes(frame, version, timestamps, clusters) for frame in frames]
    header = b"MMPLD\0" + struct.pack("<HI", version, len(frames))
    header += struct.pack("<6f", *bbox) + struct.pack("<6f", *(clip_box or bbox))
    entries = len(frames) + 1 if layout == "megamol" else len(frames)
    offset = len(header) + 8 * entries
    table = []
    for part in body:
        table.append(offset)
        offset += len(part)
    if layout == "megamol":
        table.append(offset)
    path = Path(path)
    with open(path, "wb") as handle:
        handle.write(header)
        handle.write(np.asarray(table, dtype="<u8").tobytes())
        for part in body:
            handle.write(part)
    return path


def _frame_bytes(frame: MmpldFrame, version: int, timestamps: bool, clusters: bool) -> bytes:
    out = bytearray()
    if timestamps:
        out += struct.pack("<f", frame.timestamp)
    out += struct.pack("<I", len(frame.lists))
    for entry in frame.lists:
        out += struct.pack("<BB", int(entry.vertex_type), int(entry.colour_type))
        if entry.vertex_type in (VertexType.FLOAT_XYZ, VertexType.SHORT_XYZ, VertexType.DOUBLE_XYZ):
            out += struct.pack("<f", entry.global_radius)
        if entry.colour_type == ColourType.NONE:
            out += struct.pack("<4B", *entry.global_colour)
        elif entry.colour_type in (ColourType.FLOAT_I, ColourType.DOUBLE_I):
            out += struct.pack("<2f", *entry.intensity_range)  # f32 for DOUBLE_I too, as MegaMol writes
        out += struct.pack("<Q", entry.particle_count)
        if version >= 103:
            out += struct.pack("<6f", *entry.bbox)
        if entry.vertex_type != VertexType.NONE:
            out += _particle_bytes(entry)
        if clusters:
            out += struct.pack("<IQ", entry.cluster_count, len(entry.cluster_info)) + entry.cluster_info
    return bytes(out)


def _particle_bytes(entry: ParticleList) -> bytes:
    vertex_dtype, vertex_count = VERTEX_VALUES[entry.vertex_type]
    colour_dtype, colour_count = COLOUR_VALUES[entry.colour_type]
    fields = [("v", vertex_dtype, (vertex_count,))]
    if colour_count:
        fields.append(("c", colour_dtype, (colour_count,)))
    records = np.zeros(entry.particle_count, dtype=np.dtype(fields))
    assert entry.vertices is not None and entry.vertices.shape == (entry.particle_count, vertex_count)
    records["v"] = entry.vertices
    if colour_count:
        assert entry.colours is not None and entry.colours.shape == (entry.particle_count, colour_count)
        records["c"] = entry.colours
    return records.tobytes()


def random_list(
    vertex_type: VertexType, colour_type: ColourType, count: int, rng: np.random.Generator, **header: object
) -> ParticleList:
    """A list of ``count`` random particles of the given types, values in each type's natural range."""
    vertex_dtype, vertex_count = VERTEX_VALUES[vertex_type]
    colour_dtype, colour_count = COLOUR_VALUES[colour_type]
    vertices = None
    if vertex_count:
        if vertex_dtype.kind == "u":
            vertices = rng.integers(0, np.iinfo(vertex_dtype).max + 1, size=(count, vertex_count)).astype(vertex_dtype)
        else:
            vertices = rng.uniform(-10.0, 10.0, size=(count, vertex_count)).astype(vertex_dtype)
            if vertex_type == VertexType.FLOAT_XYZR:
                vertices[:, 3] = rng.uniform(0.01, 0.5, size=count)
    colours = None
    if colour_count:
        if colour_dtype.kind == "u":
            colours = rng.integers(0, np.iinfo(colour_dtype).max + 1, size=(count, colour_count)).astype(colour_dtype)
        elif colour_count == 1:
            colours = rng.uniform(-5.0, 5.0, size=(count, 1)).astype(colour_dtype)
        else:
            colours = rng.uniform(0.0, 1.0, size=(count, colour_count)).astype(colour_dtype)
    return ParticleList(vertex_type, colour_type, vertices, colours, **header)  # type: ignore[arg-type]
