"""MMPLD conversion: both seek-table layouts, every version x vertex type x colour type, multi-list and
empty frames, historical layouts, bad input."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

import headrace
from headrace import errors
from headrace.cli.main import main
from headrace.convert import convert, mmpld
from headrace.testing.mmpld_writer import (
    ColourType,
    MmpldFrame,
    ParticleList,
    VertexType,
    random_list,
    write_mmpld,
)
from convert_support import assert_no_output

VERSIONS = (100, 101, 102, 103)
LAYOUTS = ("megamol", "library")
BBOX = (-10.0, -10.0, -10.0, 10.0, 10.0, 10.0)
INTENSITY = (ColourType.FLOAT_I, ColourType.DOUBLE_I)


def assert_refused(source: Path, error: type[Exception], message: str, capsys) -> None:
    """``convert`` raises ``error`` matching ``message``; the CLI exits 1 with one line; no output either way."""
    output = source.parent / "out.hrc"
    with pytest.raises(error, match=message):
        convert(source, output)
    assert_no_output(output)

    assert main(["convert", str(source), str(output)]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"headrace convert: {source}: offset "), lines
    assert_no_output(output)


def expected_particles(entry: ParticleList) -> np.ndarray:
    """The 8 float32 per particle the documented mapping gives (docs/converters.md, mmpld), from the
    values written: positions rounded to float32, integer colours divided in float32, grey in float64."""
    out = np.empty((entry.particle_count, 8), dtype=np.float32)
    out[:, 0:3] = entry.vertices[:, 0:3].astype(np.float32)
    out[:, 3] = entry.vertices[:, 3] if entry.vertex_type == VertexType.FLOAT_XYZR else np.float32(entry.global_radius)
    if entry.colour_type == ColourType.NONE:
        out[:, 4:8] = np.asarray(entry.global_colour, dtype=np.float32) / np.float32(255)
    elif entry.colour_type in INTENSITY:
        values = entry.colours[:, 0].astype(np.float64)
        low, high = (float(np.float32(bound)) for bound in entry.intensity_range)  # stored as f32
        if not high > low:
            finite = values[np.isfinite(values)]
            low, high = (finite.min(), finite.max()) if finite.size else (0.0, 0.0)
        out[:, 4:7] = np.clip((values - low) / (high - low), 0.0, 1.0)[:, None] if high > low else 0.5
        out[:, 7] = 1.0
    else:
        scale = {ColourType.UINT8_RGB: 255, ColourType.UINT8_RGBA: 255, ColourType.USHORT_RGBA: 65535}
        colours = entry.colours.astype(np.float32)
        if entry.colour_type in scale:
            colours = colours / np.float32(scale[entry.colour_type])
        out[:, 4 : 4 + colours.shape[1]] = colours
        if colours.shape[1] == 3:
            out[:, 7] = 1.0
    return out


def expected_frame(frame: MmpldFrame) -> tuple[np.ndarray, np.ndarray]:
    """A frame's particles and intensities (NaN where a list has none): lists with positions, in order."""
    real = [entry for entry in frame.lists if entry.vertex_type != VertexType.NONE]
    particles = [expected_particles(entry) for entry in real]
    intensity = [
        entry.colours[:, 0].astype(np.float32) if entry.colour_type in INTENSITY
        else np.full(entry.particle_count, np.nan, np.float32)
        for entry in real
    ]
    return (
        np.concatenate([np.empty((0, 8), np.float32), *particles]),
        np.concatenate([np.empty(0, np.float32), *intensity])[:, None],
    )


def check_frames(ds, frames: list[MmpldFrame]) -> None:
    assert len(ds.frames) == len(frames)
    for index, frame in enumerate(frames):
        particles, intensity = expected_frame(frame)
        np.testing.assert_array_equal(ds.read(index, "particles"), particles)
        if "intensity" in [field.name for field in ds.fields]:
            np.testing.assert_array_equal(ds.read(index, "intensity"), intensity)


def seek_table(path: Path) -> list[int]:
    """The raw seek table: frame count + 1 entries for MegaMol's layout, frame count for the library's."""
    raw = path.read_bytes()
    (count,) = struct.unpack_from("<I", raw, 8)
    entries = count + 1 if struct.unpack_from("<Q", raw, 60)[0] == 60 + 8 * (count + 1) else count
    return list(struct.unpack_from(f"<{entries}Q", raw, 60))


# --- every type, both seek tables ----------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("vertex_type", [v for v in VertexType if v != VertexType.NONE])
@pytest.mark.parametrize("colour_type", list(ColourType))
def test_every_version_vertex_and_colour_type(tmp_path, layout, version, vertex_type, colour_type):
    rng = np.random.default_rng(version * 100 + vertex_type * 10 + colour_type)
    header = dict(global_radius=0.125, global_colour=(10, 20, 30, 200), intensity_range=(-5.0, 5.0))
    frames = [
        MmpldFrame([random_list(vertex_type, colour_type, 37 + 5 * f, rng, **header)], timestamp=0.25 + f)
        for f in range(2)
    ]
    source = write_mmpld(tmp_path / "in.mmpld", frames, version=version, bbox=BBOX, layout=layout)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    names = [f.name for f in ds.fields]
    assert names == (["particles", "intensity"] if colour_type in INTENSITY else ["particles"])
    assert (ds.fields[0].dtype, ds.fields[0].components) == ("float32", 8)
    assert ds.attributes["source_format"] == "mmpld"
    assert ds.attributes["mmpld_seek_table"] == layout
    check_frames(ds, frames)
    for index, frame in enumerate(frames):
        assert ds.frames[index].time == (frame.timestamp if version >= 102 else index)
        assert ds.frames[index].bbox == (BBOX[0:3], BBOX[3:6])


@pytest.mark.parametrize("version", VERSIONS)
def test_the_library_seek_table_has_no_end_offset_and_converts_to_the_same_container(tmp_path, version):
    rng = np.random.default_rng(version)
    frames = [
        MmpldFrame([random_list(VertexType.FLOAT_XYZR, ColourType.FLOAT_I, 9 + f, rng),
                    random_list(VertexType.DOUBLE_XYZ, ColourType.USHORT_RGBA, 4, rng)], timestamp=0.5 * f)
        for f in range(4)
    ]
    megamol = write_mmpld(tmp_path / "megamol.mmpld", frames, version=version, layout="megamol")
    library = write_mmpld(tmp_path / "library.mmpld", frames, version=version, layout="library")

    # The two layouts differ only in the table: frame 0 at 60 + 8 (n + 1) or 60 + 8 n, no end offset.
    megamol_table, library_table = seek_table(megamol), seek_table(library)
    assert megamol_table[0] == 60 + 8 * 5 and library_table[0] == 60 + 8 * 4
    assert [offset - 8 for offset in megamol_table[:4]] == library_table
    assert megamol_table[4] == megamol.stat().st_size == library.stat().st_size + 8

    from_megamol = headrace.open(convert(megamol, tmp_path / "megamol.hrc"))
    from_library = headrace.open(convert(library, tmp_path / "library.hrc"))

    for ds in (from_megamol, from_library):
        check_frames(ds, frames)
        assert [frame.time for frame in ds.frames] == [0.5 * f if version >= 102 else f for f in range(4)]
    assert from_library.attributes["mmpld_seek_table"] == "library"
    assert from_megamol.attributes["mmpld_seek_table"] == "megamol"


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("version", VERSIONS)
def test_lists_of_a_frame_are_concatenated_in_file_order(tmp_path, layout, version):
    rng = np.random.default_rng(7)
    frames = [
        MmpldFrame([
            random_list(VertexType.FLOAT_XYZ, ColourType.UINT8_RGB, 11, rng, global_radius=0.5),
            ParticleList(VertexType.NONE, ColourType.NONE, count=0),  # no positions: contributes nothing
            random_list(VertexType.DOUBLE_XYZ, ColourType.FLOAT_I, 7, rng, global_radius=0.25,
                        intensity_range=(-5.0, 5.0)),
            random_list(VertexType.FLOAT_XYZR, ColourType.NONE, 5, rng, global_colour=(255, 0, 128, 64)),
            random_list(VertexType.SHORT_XYZ, ColourType.USHORT_RGBA, 3, rng, global_radius=2.0),
        ], timestamp=1.5),
        MmpldFrame([random_list(VertexType.FLOAT_XYZR, ColourType.FLOAT_RGBA, 4, rng)], timestamp=2.5),
    ]
    source = write_mmpld(tmp_path / "in.mmpld", frames, version=version, layout=layout)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    check_frames(ds, frames)  # intensity NaN where a list has none
    assert np.isnan(ds.read(1, "intensity")).all()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("colour_type", list(ColourType))
def test_lists_without_positions_are_parsed_and_contribute_nothing(tmp_path, layout, colour_type):
    # Vertex type NONE: MegaMol stores no particle data whatever the count and the colour type.
    rng = np.random.default_rng(int(colour_type))
    none = ParticleList(VertexType.NONE, colour_type, count=5, global_colour=(1, 2, 3, 4), intensity_range=(2.0, 3.0))
    frames = [
        MmpldFrame([none, random_list(VertexType.FLOAT_XYZ, ColourType.UINT8_RGBA, 6, rng), none], timestamp=1.0),
        MmpldFrame([random_list(VertexType.SHORT_XYZ, ColourType.FLOAT_RGB, 3, rng), none], timestamp=2.0),
    ]
    source = write_mmpld(tmp_path / "in.mmpld", frames, version=103, layout=layout)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    assert [field.name for field in ds.fields] == ["particles"]  # no intensity without positions
    check_frames(ds, frames)


def test_short_positions_are_unsigned(tmp_path):
    vertices = np.array([[0, 1, 32767], [32768, 65534, 65535]], np.uint16)
    frames = [MmpldFrame([ParticleList(VertexType.SHORT_XYZ, ColourType.NONE, vertices)])]
    source = write_mmpld(tmp_path / "in.mmpld", frames)

    particles = headrace.open(convert(source, tmp_path / "out.hrc")).read(0, "particles")

    np.testing.assert_array_equal(particles[:, 0:3], [[0, 1, 32767], [32768, 65534, 65535]])


def test_global_radius_and_colour_are_expanded_and_normalised(tmp_path):
    entry = ParticleList(VertexType.FLOAT_XYZ, ColourType.NONE, np.zeros((3, 3), np.float32),
                         global_radius=0.75, global_colour=(255, 51, 0, 102))
    source = write_mmpld(tmp_path / "in.mmpld", [MmpldFrame([entry])], version=103)

    particles = headrace.open(convert(source, tmp_path / "out.hrc")).read(0, "particles")

    np.testing.assert_array_equal(particles[:, 3], np.float32(0.75))
    np.testing.assert_array_equal(particles[:, 4:8], np.float32([[255, 51, 0, 102]] * 3) / np.float32(255))


def test_intensity_grey_uses_the_header_range_else_the_data_range(tmp_path):
    values = np.array([[1.0], [2.0], [3.0], [5.0]], np.float32)
    vertices = np.zeros((4, 3), np.float32)
    lists = [
        ParticleList(VertexType.FLOAT_XYZ, ColourType.FLOAT_I, vertices, values, intensity_range=(1.0, 3.0)),
        ParticleList(VertexType.FLOAT_XYZ, ColourType.FLOAT_I, vertices, values, intensity_range=(0.0, 0.0)),
        ParticleList(VertexType.FLOAT_XYZ, ColourType.DOUBLE_I, vertices, np.full((4, 1), 9.0),
                     intensity_range=(2.0, 2.0)),
    ]
    source = write_mmpld(tmp_path / "in.mmpld", [MmpldFrame(lists)], version=102)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))
    grey = ds.read(0, "particles")[:, 4]

    np.testing.assert_array_equal(grey[0:4], [0.0, 0.5, 1.0, 1.0])  # header range [1, 3], clipped
    np.testing.assert_array_equal(grey[4:8], [0.0, 0.25, 0.5, 1.0])  # empty header range: data range [1, 5]
    np.testing.assert_array_equal(grey[8:12], 0.5)  # no range at all: mid grey
    np.testing.assert_array_equal(ds.read(0, "intensity")[:, 0], np.concatenate([values[:, 0]] * 2 + [[9.0] * 4]))


def test_lists_longer_than_a_slice_are_converted_slice_by_slice(tmp_path, monkeypatch):
    monkeypatch.setattr(mmpld, "_SLICE_PARTICLES", 4)  # a list of 11 is read in 3 slices
    rng = np.random.default_rng(11)
    data_range = random_list(VertexType.FLOAT_XYZ, ColourType.FLOAT_I, 11, rng, intensity_range=(0.0, 0.0))
    data_range.colours[5, 0] = np.nan  # the data range skips NaN
    frames = [MmpldFrame([
        random_list(VertexType.DOUBLE_XYZ, ColourType.DOUBLE_I, 9, rng, intensity_range=(-1.0, 1.0)),
        random_list(VertexType.FLOAT_XYZR, ColourType.UINT8_RGB, 10, rng),
        data_range,
    ])]
    source = write_mmpld(tmp_path / "in.mmpld", frames, version=101)

    check_frames(headrace.open(convert(source, tmp_path / "out.hrc")), frames)


# --- historical frame layouts -----------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_version_1_3_without_frame_timestamps_is_recognised(tmp_path, layout):
    rng = np.random.default_rng(3)
    frames = [MmpldFrame([random_list(VertexType.FLOAT_XYZR, ColourType.UINT8_RGBA, 9, rng)], timestamp=7.0)] * 3
    source = write_mmpld(tmp_path / "in.mmpld", frames, version=103, frame_timestamps=False, layout=layout)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    assert [frame.time for frame in ds.frames] == [0.0, 1.0, 2.0]
    assert "without frame timestamps" in ds.attributes["mmpld_layout"]
    check_frames(ds, frames)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("cluster_info", [True, False])
def test_version_1_1_with_and_without_cluster_info(tmp_path, layout, cluster_info):
    rng = np.random.default_rng(4)
    entries = [random_list(VertexType.FLOAT_XYZ, ColourType.FLOAT_RGB, 6, rng, cluster_count=2,
                           cluster_info=bytes(range(24))) for _ in range(2)]
    frames = [MmpldFrame(entries)]
    source = write_mmpld(tmp_path / "in.mmpld", frames, version=101, cluster_info=cluster_info, layout=layout)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    check_frames(ds, frames)
    assert ("without" in ds.attributes["mmpld_layout"]) != cluster_info


def test_format_is_guessed_from_the_magic(tmp_path):
    rng = np.random.default_rng(5)
    frames = [MmpldFrame([random_list(VertexType.FLOAT_XYZ, ColourType.UINT8_RGBA, 4, rng)])]
    source = write_mmpld(tmp_path / "particles.dat", frames, version=100, layout="library")

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    assert ds.attributes["source_format"] == "mmpld"


# --- empty frames ---------------------------------------------------------------------------------------------


def empty_lists() -> list[ParticleList]:
    """Lists of every kind holding no particles (count 0)."""
    return [
        ParticleList(VertexType.FLOAT_XYZ, ColourType.UINT8_RGBA, np.zeros((0, 3)), np.zeros((0, 4))),
        ParticleList(VertexType.DOUBLE_XYZ, ColourType.DOUBLE_I, np.zeros((0, 3)), np.zeros((0, 1))),
        ParticleList(VertexType.FLOAT_XYZR, ColourType.NONE, np.zeros((0, 4))),
        ParticleList(VertexType.NONE, ColourType.FLOAT_I, count=0),
    ]


def check_empty_frame(ds, index: int) -> None:
    assert ds.read(index, "particles").shape == (0, 8)
    if "intensity" in [field.name for field in ds.fields]:
        assert ds.read(index, "intensity").shape == (0, 1)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("version", VERSIONS)
def test_a_frame_whose_lists_are_all_empty_is_an_empty_frame(tmp_path, layout, version):
    rng = np.random.default_rng(version)
    frames = [
        MmpldFrame([random_list(VertexType.FLOAT_XYZ, ColourType.FLOAT_I, 8, rng)], timestamp=1.0),
        MmpldFrame(empty_lists(), timestamp=2.0),
        MmpldFrame([random_list(VertexType.FLOAT_XYZR, ColourType.UINT8_RGB, 3, rng)], timestamp=3.0),
    ]
    source = write_mmpld(tmp_path / "in.mmpld", frames, version=version, layout=layout)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    check_frames(ds, frames)
    check_empty_frame(ds, 1)
    assert [frame.time for frame in ds.frames] == ([1.0, 2.0, 3.0] if version >= 102 else [0.0, 1.0, 2.0])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("version", VERSIONS)
def test_frames_with_no_lists_first_and_last_are_empty_frames(tmp_path, layout, version):
    rng = np.random.default_rng(version + 1)
    frames = [
        MmpldFrame([], timestamp=0.5),
        MmpldFrame([random_list(VertexType.SHORT_XYZ, ColourType.FLOAT_RGBA, 5, rng)], timestamp=1.5),
        MmpldFrame([], timestamp=2.5),
    ]
    source = write_mmpld(tmp_path / "in.mmpld", frames, version=version, layout=layout)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    check_frames(ds, frames)
    check_empty_frame(ds, 0)
    check_empty_frame(ds, 2)


@pytest.mark.parametrize("cluster_info", [True, False])
def test_a_first_frame_without_lists_does_not_decide_the_1_1_layout(tmp_path, cluster_info):
    # Frame 0 reads the same with and without cluster-info blocks; frame 1 tells them apart.
    rng = np.random.default_rng(12)
    frames = [MmpldFrame([]), MmpldFrame([random_list(VertexType.FLOAT_XYZ, ColourType.NONE, 4, rng)])]
    source = write_mmpld(tmp_path / "in.mmpld", frames, version=101, cluster_info=cluster_info)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    check_frames(ds, frames)
    assert ("without" in ds.attributes["mmpld_layout"]) != cluster_info


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_long_series_with_empty_frames(tmp_path, layout):
    rng = np.random.default_rng(13)
    types = [(v, c) for v in VertexType if v != VertexType.NONE for c in ColourType]
    frames = []
    for index in range(60):
        if index % 5 == 1:
            lists = []
        elif index % 7 == 2:
            lists = empty_lists()
        else:
            chosen = rng.choice(len(types), size=int(rng.integers(1, 4)), replace=False)
            lists = [random_list(*types[i], int(rng.integers(1, 30)), rng, intensity_range=(-5.0, 5.0)) for i in chosen]
        frames.append(MmpldFrame(lists, timestamp=0.125 * index))
    source = write_mmpld(tmp_path / "in.mmpld", frames, version=103, layout=layout)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    assert [field.name for field in ds.fields] == ["particles", "intensity"]
    assert [frame.time for frame in ds.frames] == [0.125 * index for index in range(60)]
    check_frames(ds, frames)
    empty = [index for index, frame in enumerate(frames) if not expected_frame(frame)[0].size]
    assert len(empty) >= 15
    for index in empty:
        check_empty_frame(ds, index)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_file_of_empty_frames_only(tmp_path, layout):
    frames = [MmpldFrame([]), MmpldFrame(empty_lists()), MmpldFrame([])]
    source = write_mmpld(tmp_path / "in.mmpld", frames, version=102, layout=layout)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    # An empty DOUBLE_I list with positions declares an intensity: the field exists, empty in every frame.
    assert [field.name for field in ds.fields] == ["particles", "intensity"]
    for index in range(3):
        check_empty_frame(ds, index)


# --- bad input ------------------------------------------------------------------------------------------------


def good_file(tmp_path: Path, version: int = 103, layout: str = "megamol") -> Path:
    rng = np.random.default_rng(6)
    frames = [MmpldFrame([random_list(VertexType.FLOAT_XYZR, ColourType.UINT8_RGBA, 20, rng)], timestamp=t)
              for t in range(3)]
    return write_mmpld(tmp_path / "in.mmpld", frames, version=version, layout=layout)


def patch(path: Path, offset: int, value: bytes) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset : offset + len(value)] = value
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(
    "cut, offset",
    [
        (3, 0),          # inside the magic
        (30, 0),         # inside the 60-byte header
        (64, 60),        # inside the seek table's first entry
        (70, 60),        # inside the seek table
        ("frame 1", "frame 1"),  # inside a frame: names the frame that is cut
    ],
)
def test_truncated_file(tmp_path, capsys, layout, cut, offset):
    source = good_file(tmp_path, layout=layout)
    offsets = seek_table(source)
    size = offsets[1] + 10 if cut == "frame 1" else cut
    offset = offsets[1] if offset == "frame 1" else offset
    source.write_bytes(source.read_bytes()[:size])

    assert_refused(source, errors.TruncatedFileError, rf"in\.mmpld: offset {offset}: expected", capsys)


def test_truncated_last_frame_of_a_library_table(tmp_path, capsys):
    # Without an end offset only the file's end bounds the last frame: running past it is truncation.
    source = good_file(tmp_path, layout="library")
    last = seek_table(source)[2]
    particles = last + 4 + 4 + 2 + 8 + 24  # timestamp, list count, types, count, list bounding box
    source.write_bytes(source.read_bytes()[: particles + 8])

    assert_refused(
        source, errors.TruncatedFileError,
        rf"offset {particles}: expected 20 particles of 20 bytes \(400 bytes\) inside frame 2, "
        rf"found 8 bytes left before the end of the file at offset {particles + 8}",
        capsys,
    )


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_frame_ending_past_the_file(tmp_path, capsys, layout):
    source = good_file(tmp_path, layout=layout)
    offsets, size = seek_table(source), source.stat().st_size
    for entry in range(2, len(offsets)):  # frame 1 ends past the file (and so, in order, does what follows)
        patch(source, 60 + 8 * entry, struct.pack("<Q", size + 100))

    assert_refused(
        source, errors.TruncatedFileError,
        rf"offset {offsets[1]}: expected frame 1 of {size + 100 - offsets[1]} bytes \(to offset {size + 100}\), "
        rf"found the file ends at offset {size}",
        capsys,
    )


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("frame_0", [0, 60, 83, 85, 91])
def test_a_seek_table_that_fits_neither_layout(tmp_path, capsys, layout, frame_0):
    # Three frames: the library's frame 0 starts at 60 + 8 * 3 = 84, MegaMol's at 92 or later.
    source = good_file(tmp_path, layout=layout)
    patch(source, 60, struct.pack("<Q", frame_0))

    assert_refused(
        source, errors.CorruptIndexError,
        r"offset 60: expected frame 0 to start right after the seek table: at offset 84 \(one offset per frame, "
        r"as the mmpld library writes\) or at offset 92 or later \(frames \+ 1 offsets, as MegaMol writes\), "
        rf"found offset {frame_0}$",
        capsys,
    )


@pytest.mark.parametrize("layout", LAYOUTS)
def test_seek_table_entries_out_of_order(tmp_path, capsys, layout):
    source = good_file(tmp_path, layout=layout)
    frame_0 = seek_table(source)[0]
    patch(source, 68, struct.pack("<Q", 0))

    assert_refused(source, errors.CorruptIndexError, rf"offset 68: expected seek table entry 1 >= {frame_0}", capsys)


@pytest.mark.parametrize(
    "at, value, error, message",
    [
        (0, b"MMPLX\0", errors.BadMagicError, r"offset 0: expected the MMPLD magic"),
        (6, struct.pack("<H", 104), errors.UnsupportedVersionError,
         r"offset 6: expected version 100, 101, 102 or 103.*found 104"),
        (6, struct.pack("<H", 0), errors.UnsupportedVersionError, r"offset 6: .*found 0 \(MegaMol writes 0 until"),
        (8, struct.pack("<I", 0), errors.CorruptIndexError, r"offset 8: expected a frame count of at least 1, found 0"),
    ],
)
def test_bad_header(tmp_path, capsys, at, value, error, message):
    source = good_file(tmp_path)
    patch(source, at, value)

    assert_refused(source, error, message, capsys)


def test_trailing_bytes_after_the_megamol_end_offset(tmp_path, capsys):
    source = good_file(tmp_path)
    end = seek_table(source)[-1]
    source.write_bytes(source.read_bytes() + b"junk")

    assert_refused(
        source, errors.CorruptIndexError, rf"offset {end}: expected the end of the file.*found 4 more bytes", capsys
    )


def test_trailing_bytes_after_the_last_frame_of_a_library_table(tmp_path, capsys):
    source = good_file(tmp_path, layout="library")
    end = source.stat().st_size
    source.write_bytes(source.read_bytes() + b"junk")

    assert_refused(
        source, errors.CorruptIndexError,
        rf"offset {end}: expected frame 2 to end at offset {end + 4} \(the end of the file\), "
        rf"found its 1 lists end at offset {end}",
        capsys,
    )


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(
    "which, value, message", [(0, 9, "a vertex type 0..4, found 9"), (1, 8, "a colour type 0..7, found 8")]
)
def test_unknown_vertex_or_colour_type(tmp_path, capsys, layout, which, value, message):
    source = good_file(tmp_path, layout=layout)
    type_offset = seek_table(source)[1] + 8 + which  # frame 1: timestamp, list count, then the two types
    patch(source, type_offset, bytes([value]))

    assert_refused(source, errors.CorruptIndexError, rf"offset {type_offset}: expected {message}", capsys)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_particle_count_past_the_frame_end(tmp_path, capsys, layout):
    source = good_file(tmp_path, version=102, layout=layout)
    count_offset = seek_table(source)[0] + 8 + 2  # timestamp, list count, two type bytes (XYZR: no global radius)
    patch(source, count_offset, struct.pack("<Q", 21))  # 20 particles are stored

    assert_refused(
        source, errors.CorruptIndexError,
        rf"offset {count_offset + 8}: expected 21 particles of 20 bytes \(420 bytes\) inside frame 0, "
        r"found 400 bytes left before the frame's end",
        capsys,
    )


def test_missing_file(tmp_path):
    with pytest.raises(errors.FileOpenError, match=r"nothing\.mmpld: cannot open"):
        convert(tmp_path / "nothing.mmpld", tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")


def test_interrupted_conversion_leaves_no_output(tmp_path):
    source = good_file(tmp_path)
    output = tmp_path / "out.hrc"

    def interrupt(done):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        convert(source, output, progress=interrupt)
    assert_no_output(output)
