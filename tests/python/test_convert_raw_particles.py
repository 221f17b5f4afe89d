"""Raw float32 particle files (seed 000's layout): round trips, frame splits, bad sizes."""

from __future__ import annotations


import numpy as np
import pytest

import headrace
from headrace import errors
from headrace.convert import convert, raw_particles
from convert_support import assert_no_output


def particles(count: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    data = rng.random((count, 8), dtype=np.float32)
    data[:, 0:3] = data[:, 0:3] * 4.0 - 1.0
    return data


def test_whole_file_is_one_frame_by_default(tmp_path):
    data = particles(1000)
    source = tmp_path / "p.raw"
    data.tofile(source)

    ds = headrace.open(convert(source, tmp_path / "out.hrc", format="raw-particles"))  # .raw alone: a grid or
    # particles, never guessed (test_first_hour_convert.py)

    assert [(f.name, f.dtype, f.components) for f in ds.fields] == [("particles", "float32", 8)]
    assert len(ds.frames) == 1
    np.testing.assert_array_equal(ds.read(0, "particles"), data)
    assert ds.frames[0].time == 0.0
    np.testing.assert_array_equal(ds.frames[0].bbox, [data[:, 0:3].min(0), data[:, 0:3].max(0)])
    assert ds.attributes["source_format"] == "raw-particles"


@pytest.mark.parametrize("split", [{"particles_per_frame": 250}, {"frames": 4}])
def test_frames_back_to_back(tmp_path, split):
    data = particles(1000, seed=1)
    source = tmp_path / "p.raw"
    data.tofile(source)

    ds = headrace.open(convert(source, tmp_path / "out.hrc", **split))

    assert [frame.time for frame in ds.frames] == [0.0, 1.0, 2.0, 3.0]
    for index in range(4):
        np.testing.assert_array_equal(ds.read(index, "particles"), data[index * 250 : (index + 1) * 250])


def test_frames_larger_than_a_slice_are_written_in_pieces(tmp_path, monkeypatch):
    monkeypatch.setattr(raw_particles, "_SLICE_PARTICLES", 64)
    data = particles(1000, seed=2)
    source = tmp_path / "p.raw"
    data.tofile(source)

    ds = headrace.open(convert(source, tmp_path / "out.hrc", frames=2, codec="zstd"))

    np.testing.assert_array_equal(ds.read(1, "particles"), data[500:])


def test_size_not_a_multiple_of_32_bytes(tmp_path):
    source = tmp_path / "p.raw"
    source.write_bytes(particles(10).tobytes() + b"\0" * 12)

    with pytest.raises(errors.TruncatedFileError,
                       match=r"p\.raw: offset 320: expected a multiple of 32 bytes .*found 332 bytes"):
        convert(source, tmp_path / "out.hrc", format="raw-particles")
    assert_no_output(tmp_path / "out.hrc")


@pytest.mark.parametrize("split, offset", [({"particles_per_frame": 4}, 256), ({"frames": 3}, 288)])
def test_partial_last_frame(tmp_path, split, offset):
    source = tmp_path / "p.raw"
    particles(10).tofile(source)

    with pytest.raises(errors.TruncatedFileError, match=rf"p\.raw: offset {offset}: expected .*frames"):
        convert(source, tmp_path / "out.hrc", **split)
    assert_no_output(tmp_path / "out.hrc")


def test_empty_file(tmp_path):
    source = tmp_path / "p.raw"
    source.write_bytes(b"")

    with pytest.raises(errors.EmptyFieldError, match=r"p\.raw: offset 0: expected at least one particle"):
        convert(source, tmp_path / "out.hrc", format="raw-particles")
    assert_no_output(tmp_path / "out.hrc")


@pytest.mark.parametrize("options", [{"particles_per_frame": 5, "frames": 2}, {"frames": 0}, {"field": "x"}])
def test_bad_options(tmp_path, options):
    source = tmp_path / "p.raw"
    particles(10).tofile(source)

    with pytest.raises(errors.UsageError):
        convert(source, tmp_path / "out.hrc", **options)
    assert_no_output(tmp_path / "out.hrc")


def test_unknown_extension_needs_a_format(tmp_path):
    source = tmp_path / "p.bin"
    particles(10).tofile(source)

    with pytest.raises(errors.UsageError, match=r"p\.bin: cannot tell the input format.*--format"):
        convert(source, tmp_path / "out.hrc")
    ds = headrace.open(convert(source, tmp_path / "out.hrc", format="raw-particles"))
    assert len(ds.frames) == 1


def test_output_may_not_overwrite_the_input(tmp_path):
    source = tmp_path / "p.raw"
    particles(10).tofile(source)

    with pytest.raises(errors.UsageError, match="overwrite an input"):
        convert(source, source)
    assert source.stat().st_size == 320
