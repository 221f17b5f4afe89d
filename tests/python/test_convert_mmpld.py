"""MMPLD conversion: every version x vertex type x colour type, multi-list frames, layouts, bad input."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

import headrace
from headrace import errors
from headrace.convert import convert
from headrace.testing.mmpld_writer import (
    ColourType,
    MmpldFrame,
    ParticleList,
    VertexType,
    random_list,
    write_mmpld,
)

VERSIONS = (100, 101, 102, 103)
BBOX = (-10.0, -10.0, -10.0, 10.0, 10.0, 10.0)
INTENSITY = (ColourType.FLOAT_I, ColourType.DOUBLE_I)


def assert_no_output(path: Path) -> None:
    assert not path.exists()
    assert not list(path.parent.glob(path.name + ".*")), "a partial file was left behind"


def expected_particles(entry: ParticleList) -> np.ndarray:
    """The 8 float32 per particle the issue's mapping rules give, computed from the written values."""
    n = entry.particle_count
    out = np.empty((n, 8), dtype=np.float32)
    vertices = entry.vertices.astype(np.float64)
    out[:, 0:3] = vertices[:, 0:3]
    out[:, 3] = vertices[:, 3] if entry.vertex_type == VertexType.FLOAT_XYZR else entry.global_radius
    colours = None if entry.colours is None else entry.colours.astype(np.float64)
    if entry.colour_type == ColourType.NONE:
        out[:, 4:8] = np.asarray(entry.global_colour) / 255.0
    elif entry.colour_type in INTENSITY:
        low, high = entry.intensity_range
        out[:, 4:7] = np.clip((colours - low) / (high - low), 0.0, 1.0)
        out[:, 7] = 1.0
    else:
        scale = {ColourType.UINT8_RGB: 255.0, ColourType.UINT8_RGBA: 255.0, ColourType.USHORT_RGBA: 65535.0}
        out[:, 4 : 4 + colours.shape[1]] = colours / scale.get(entry.colour_type, 1.0)
        if colours.shape[1] == 3:
            out[:, 7] = 1.0
    return out


def check_particles(actual: np.ndarray, expected: np.ndarray) -> None:
    # Everything but an intensity's grey is an exact conversion; the grey is computed in float32.
    np.testing.assert_array_equal(actual[:, 0:4], expected[:, 0:4])
    np.testing.assert_allclose(actual[:, 4:8], expected[:, 4:8], rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("vertex_type", [v for v in VertexType if v != VertexType.NONE])
@pytest.mark.parametrize("colour_type", list(ColourType))
def test_every_version_vertex_and_colour_type(tmp_path, version, vertex_type, colour_type):
    rng = np.random.default_rng(version * 100 + vertex_type * 10 + colour_type)
    header = dict(global_radius=0.125, global_colour=(10, 20, 30, 200), intensity_range=(-5.0, 5.0))
    frames = [
        MmpldFrame([random_list(vertex_type, colour_type, 37 + 5 * f, rng, **header)], timestamp=0.25 + f)
        for f in range(2)
    ]
    source = write_mmpld(tmp_path / "in.mmpld", frames, version=version, bbox=BBOX)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    names = [f.name for f in ds.fields]
    assert names == (["particles", "intensity"] if colour_type in INTENSITY else ["particles"])
    assert (ds.fields[0].dtype, ds.fields[0].components) == ("float32", 8)
    assert ds.attributes["source_format"] == "mmpld"
    assert len(ds.frames) == 2
    for index, frame in enumerate(frames):
        entry = frame.lists[0]
        check_particles(ds.read(index, "particles"), expected_particles(entry))
        assert ds.frames[index].time == pytest.approx(frame.timestamp if version >= 102 else index)
        assert ds.frames[index].bbox == (BBOX[0:3], BBOX[3:6])
        if colour_type in INTENSITY:
            np.testing.assert_array_equal(ds.read(index, "intensity")[:, 0], entry.colours[:, 0].astype(np.float32))


@pytest.mark.parametrize("version", VERSIONS)
def test_lists_of_a_frame_are_concatenated_in_file_order(tmp_path, version):
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
    source = write_mmpld(tmp_path / "in.mmpld", frames, version=version)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    for index, frame in enumerate(frames):
        real = [entry for entry in frame.lists if entry.vertex_type != VertexType.NONE]
        check_particles(ds.read(index, "particles"), np.concatenate([expected_particles(e) for e in real]))
        intensity = ds.read(index, "intensity")[:, 0]
        expected = np.concatenate([
            e.colours[:, 0].astype(np.float32) if e.colour_type in INTENSITY else np.full(e.particle_count, np.nan)
            for e in real
        ]).astype(np.float32)
        np.testing.assert_array_equal(intensity, expected)  # NaN where a list has no intensity


def test_global_radius_and_colour_are_expanded_and_normalised(tmp_path):
    entry = ParticleList(VertexType.FLOAT_XYZ, ColourType.NONE, np.zeros((3, 3), np.float32),
                         global_radius=0.75, global_colour=(255, 51, 0, 102))
    source = write_mmpld(tmp_path / "in.mmpld", [MmpldFrame([entry])], version=103)

    particles = headrace.open(convert(source, tmp_path / "out.hrc")).read(0, "particles")

    np.testing.assert_array_equal(particles[:, 3], np.float32(0.75))
    np.testing.assert_allclose(particles[:, 4:8], [[1.0, 0.2, 0.0, 0.4]] * 3, rtol=1e-7)


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

    np.testing.assert_allclose(grey[0:4], [0.0, 0.5, 1.0, 1.0])  # header range [1, 3], clipped
    np.testing.assert_allclose(grey[4:8], [0.0, 0.25, 0.5, 1.0])  # empty header range: data range [1, 5]
    np.testing.assert_allclose(grey[8:12], 0.5)  # no range at all: mid grey
    np.testing.assert_array_equal(ds.read(0, "intensity")[:, 0], np.concatenate([values[:, 0]] * 2 + [[9.0] * 4]))


def test_version_1_3_without_frame_timestamps_is_recognised(tmp_path):
    rng = np.random.default_rng(3)
    frames = [MmpldFrame([random_list(VertexType.FLOAT_XYZR, ColourType.UINT8_RGBA, 9, rng)], timestamp=7.0)] * 3
    source = write_mmpld(tmp_path / "in.mmpld", frames, version=103, frame_timestamps=False)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    assert [frame.time for frame in ds.frames] == [0.0, 1.0, 2.0]
    assert "without frame timestamps" in ds.attributes["mmpld_layout"]
    check_particles(ds.read(2, "particles"), expected_particles(frames[2].lists[0]))


@pytest.mark.parametrize("cluster_info", [True, False])
def test_version_1_1_with_and_without_cluster_info(tmp_path, cluster_info):
    rng = np.random.default_rng(4)
    entries = [random_list(VertexType.FLOAT_XYZ, ColourType.FLOAT_RGB, 6, rng, cluster_count=2,
                           cluster_info=bytes(range(24))) for _ in range(2)]
    source = write_mmpld(tmp_path / "in.mmpld", [MmpldFrame(entries)], version=101, cluster_info=cluster_info)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    check_particles(ds.read(0, "particles"), np.concatenate([expected_particles(e) for e in entries]))
    assert ("without" in ds.attributes["mmpld_layout"]) != cluster_info


def test_format_is_guessed_from_the_magic(tmp_path):
    rng = np.random.default_rng(5)
    source = write_mmpld(tmp_path / "particles.dat", [MmpldFrame([random_list(VertexType.FLOAT_XYZ, ColourType.UINT8_RGBA, 4, rng)])], version=100)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    assert ds.attributes["source_format"] == "mmpld"


def good_file(tmp_path: Path, version: int = 103) -> Path:
    rng = np.random.default_rng(6)
    frames = [MmpldFrame([random_list(VertexType.FLOAT_XYZR, ColourType.UINT8_RGBA, 20, rng)], timestamp=t)
              for t in range(3)]
    return write_mmpld(tmp_path / "in.mmpld", frames, version=version)


def table(path: Path) -> list[int]:
    raw = path.read_bytes()
    (count,) = struct.unpack_from("<I", raw, 8)
    return list(struct.unpack_from(f"<{count + 1}Q", raw, 60))


@pytest.mark.parametrize(
    "cut, offset",
    [
        (3, 0),          # inside the magic
        (30, 0),         # inside the 60-byte header
        (70, 60),        # inside the frame table
        ("frame 1", "frame 1"),  # inside a frame: names the frame that is cut
    ],
)
def test_truncated_file(tmp_path, cut, offset):
    source = good_file(tmp_path)
    offsets = table(source)
    size = offsets[1] + 10 if cut == "frame 1" else cut
    offset = offsets[1] if offset == "frame 1" else offset
    source.write_bytes(source.read_bytes()[:size])
    output = tmp_path / "out.hrc"

    with pytest.raises(errors.TruncatedFileError, match=rf"in\.mmpld: offset {offset}: expected"):
        convert(source, output)
    assert_no_output(output)


@pytest.mark.parametrize(
    "patch, error, message",
    [
        ((0, b"MMPLX\0"), errors.BadMagicError, r"offset 0: expected the MMPLD magic"),
        ((6, struct.pack("<H", 104)), errors.UnsupportedVersionError, r"offset 6: expected version 100, 101, 102 or 103.*found 104"),
        ((6, struct.pack("<H", 0)), errors.UnsupportedVersionError, r"offset 6: .*found 0 \(MegaMol writes 0 until"),
        ((8, struct.pack("<I", 0)), errors.CorruptIndexError, r"offset 8: expected a frame count of at least 1, found 0"),
        ((60, struct.pack("<Q", 10)), errors.CorruptIndexError, r"offset 60: expected frame 0 to start after the frame table"),
        ((68, struct.pack("<Q", 0)), errors.CorruptIndexError, r"offset 68: expected frame table entry 1"),
    ],
)
def test_bad_header(tmp_path, patch, error, message):
    source = good_file(tmp_path)
    raw = bytearray(source.read_bytes())
    at, value = patch
    raw[at : at + len(value)] = value
    source.write_bytes(bytes(raw))
    output = tmp_path / "out.hrc"

    with pytest.raises(error, match=message):
        convert(source, output)
    assert_no_output(output)


def test_trailing_bytes_after_the_last_frame(tmp_path):
    source = good_file(tmp_path)
    end = table(source)[-1]
    source.write_bytes(source.read_bytes() + b"junk")

    with pytest.raises(errors.CorruptIndexError, match=rf"offset {end}: expected the end of the file.*found 4 more bytes"):
        convert(source, tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")


def test_unknown_vertex_type(tmp_path):
    source = good_file(tmp_path)
    list_offset = table(source)[1] + 8  # frame 1: timestamp, list count, then the vertex type
    raw = bytearray(source.read_bytes())
    raw[list_offset] = 9
    source.write_bytes(bytes(raw))

    with pytest.raises(errors.CorruptIndexError, match=rf"offset {list_offset}: expected a vertex type 0..4, found 9"):
        convert(source, tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")


def test_particle_count_past_the_frame_end(tmp_path):
    source = good_file(tmp_path, version=102)
    count_offset = table(source)[0] + 8 + 2  # timestamp, list count, two type bytes (XYZR: no global radius)
    raw = bytearray(source.read_bytes())
    raw[count_offset : count_offset + 8] = struct.pack("<Q", 21)  # 20 particles are stored
    source.write_bytes(bytes(raw))

    with pytest.raises(errors.CorruptIndexError, match=r"offset \d+: expected 21 particles of 20 bytes \(420 bytes\) inside frame 0"):
        convert(source, tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")


def test_frame_without_particles_is_an_empty_field(tmp_path):
    frames = [MmpldFrame([ParticleList(VertexType.FLOAT_XYZ, ColourType.NONE, np.zeros((0, 3), np.float32))])]
    source = write_mmpld(tmp_path / "in.mmpld", frames, version=103)

    with pytest.raises(errors.EmptyFieldError, match=r"offset 76: expected particles in frame 0"):
        convert(source, tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")


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
