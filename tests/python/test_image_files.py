"""Images written as renders write them: one PNG through a temporary file, a series by background threads."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from headrace.imaging import ImageWriter, write_image


def _image(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    image = np.zeros((48, 64, 4), np.uint8)
    image[8:40, 10:50] = rng.integers(0, 256, (32, 40, 4), dtype=np.uint8)
    image[..., 3] = 255
    return image


def test_a_png_holds_the_pixels_and_no_partial_file_stays(tmp_path):
    write_image(tmp_path / "a.png", _image(1))
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "a.png")), _image(1))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png"]


def test_a_series_written_in_the_background_is_every_image_in_place(tmp_path):
    with ImageWriter(threads=3, pending=2) as writer:
        for n in range(12):
            writer.write(tmp_path / f"frame_{n:05d}.png", _image(n))
            assert len(writer._writes) <= 2  # bounded: a write waits for the oldest first
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"frame_{n:05d}.png" for n in range(12)]
    for n in range(12):
        np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / f"frame_{n:05d}.png")), _image(n))


def test_a_failed_background_write_is_raised_and_the_others_finish(tmp_path):
    writer = ImageWriter(threads=2)
    writer.write(tmp_path / "good.png", _image(0))
    writer.write(tmp_path / "bad.bogus", _image(1))  # no format for the suffix: fails in its thread
    writer.write(tmp_path / "also-good.png", _image(2))
    with pytest.raises(Exception, match="bad.bogus"):
        writer.close()
    assert (tmp_path / "good.png").exists() and (tmp_path / "also-good.png").exists()


def test_leaving_on_an_error_waits_for_the_writes_and_keeps_the_error(tmp_path):
    with pytest.raises(KeyError):
        with ImageWriter(threads=2) as writer:
            for n in range(4):
                writer.write(tmp_path / f"f{n}.png", _image(n))
            raise KeyError("the render failed")
    assert len(list(tmp_path.glob("*.png"))) == 4
