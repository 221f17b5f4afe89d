"""BOV conversion: every DATA_FORMAT, components, byte orders, centering, several headers, bad headers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import headrace
from headrace import errors
from headrace.convert import bov, convert
from convert_support import assert_no_output

FORMATS = {"BYTE": "u1", "SHORT": "i2", "INT": "i4", "FLOAT": "f4", "DOUBLE": "f8"}


def grid_values(dims, components, dtype, seed=0) -> np.ndarray:
    """Values in (Z, Y, X, c) order, as a BOV data file stores them (x fastest)."""
    rng = np.random.default_rng(seed)
    x, y, z = dims
    values = rng.uniform(-100, 100, (z, y, x, components))
    return values.astype(dtype)


def write_bov(directory: Path, name: str, values: np.ndarray, data_format: str, *, endian: str = "LITTLE",
              extra: str = "", byte_offset: int = 0, time: float | None = None) -> Path:
    z, y, x, components = values.shape
    data = directory / f"{name}.dat"
    order = "<" if endian == "LITTLE" else ">"
    data.write_bytes(b"\xff" * byte_offset + values.astype(values.dtype.newbyteorder(order)).tobytes())
    lines = [
        "# written by the headrace tests",
        f"DATA_FILE: {data.name}",
        f"DATA_SIZE: {x} {y} {z}",
        f"DATA_FORMAT: {data_format}",
        "VARIABLE: density",
        f"DATA_ENDIAN: {endian}",
        "BRICK_ORIGIN: 1.0 2.0 3.0",
        "BRICK_SIZE: 10.0 20.0 30.0",
        f"DATA_COMPONENTS: {components}",
    ]
    if byte_offset:
        lines.append(f"BYTE_OFFSET: {byte_offset}")
    if time is not None:
        lines.append(f"TIME: {time}")
    header = directory / f"{name}.bov"
    header.write_text("\n".join(lines) + "\n" + extra)
    return header


@pytest.mark.parametrize("data_format", FORMATS)
@pytest.mark.parametrize("components", [1, 3])
@pytest.mark.parametrize("endian", ["LITTLE", "BIG"])
def test_formats_components_and_byte_orders(tmp_path, data_format, components, endian):
    values = grid_values((5, 4, 3), components, FORMATS[data_format])
    header = write_bov(tmp_path, "t0", values, data_format, endian=endian)

    ds = headrace.open(convert(header, tmp_path / "out.hrc"))

    field = ds.fields[0]
    assert (field.name, field.dtype, field.components) == ("density", np.dtype(FORMATS[data_format]).name, components)
    np.testing.assert_array_equal(ds.read(0, "density"), values[..., 0] if components == 1 else values)  # (z, y, x[, c])
    assert list(ds.attributes["grid_dims"]) == [5, 4, 3]
    assert list(ds.attributes["grid_origin"]) == [1.0, 2.0, 3.0]
    assert list(ds.attributes["grid_spacing"]) == [10.0 / 4, 20.0 / 3, 30.0 / 2]
    assert ds.attributes["layout"] == "linear"
    assert ds.frames[0].bbox == ((1.0, 2.0, 3.0), (11.0, 22.0, 33.0))


def test_zonal_values_sit_at_cell_centres(tmp_path):
    values = grid_values((5, 4, 2), 1, "f4")
    header = write_bov(tmp_path, "t0", values, "FLOAT", extra="CENTERING: zonal\n")

    ds = headrace.open(convert(header, tmp_path / "out.hrc"))

    spacing = [10.0 / 5, 20.0 / 4, 30.0 / 2]
    assert list(ds.attributes["grid_spacing"]) == spacing
    assert list(ds.attributes["grid_origin"]) == [1.0 + spacing[0] / 2, 2.0 + spacing[1] / 2, 3.0 + spacing[2] / 2]
    assert ds.attributes["bov_centering"] == "zonal"


def test_byte_offset_comments_and_ignored_keys(tmp_path):
    values = grid_values((3, 3, 3), 1, "f8")
    header = write_bov(tmp_path, "t0", values, "DOUBLE", byte_offset=4,
                       extra="# a comment\nDIVIDE_BRICK: true\nDATA_BRICKLETS: 3 3 3\n")

    ds = headrace.open(convert(header, tmp_path / "out.hrc"))

    np.testing.assert_array_equal(ds.read(0, "density"), values[..., 0])


def test_several_headers_become_frames_in_order(tmp_path):
    frames = [grid_values((4, 4, 4), 3, "f4", seed=s) for s in range(11)]
    for index, values in enumerate(frames):
        write_bov(tmp_path, f"step{index}", values, "FLOAT", time=0.5 * index)

    ds = headrace.open(convert(str(tmp_path / "step*.bov"), tmp_path / "out.hrc"))  # a glob, in natural order

    assert [frame.time for frame in ds.frames] == [0.5 * i for i in range(11)]
    for index, values in enumerate(frames):
        np.testing.assert_array_equal(ds.read(index, "density"), values)
    directory = headrace.open(convert(tmp_path, tmp_path / "dir.hrc"))
    np.testing.assert_array_equal(directory.read(10, "density"), frames[10])


def test_frames_larger_than_a_slice_are_written_in_pieces(tmp_path, monkeypatch):
    monkeypatch.setattr(bov, "_SLICE_BYTES", 100)
    values = grid_values((8, 8, 8), 3, "f8")
    header = write_bov(tmp_path, "t0", values, "DOUBLE", endian="BIG")

    ds = headrace.open(convert(header, tmp_path / "out.hrc"))

    np.testing.assert_array_equal(ds.read(0, "density"), values)


def test_missing_data_file_key(tmp_path):
    header = tmp_path / "t0.bov"
    text = "DATA_SIZE: 2 2 2\nDATA_FORMAT: FLOAT\n"
    header.write_text(text)

    with pytest.raises(errors.CorruptIndexError,
                       match=rf"t0\.bov: offset {len(text)}: expected a DATA_FILE line naming the data file, found none"):
        convert(header, tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")


@pytest.mark.parametrize(
    "text, offset, message",
    [
        ("DATA_FILE: a.dat\nDATA_FORMAT: FLOAT\n", 36, "a DATA_SIZE line"),
        ("DATA_FILE: a.dat\nDATA_SIZE: 2 2\nDATA_FORMAT: FLOAT\n", 17, "DATA_SIZE as three int values"),
        ("DATA_FILE: a.dat\nDATA_SIZE: 2 0 2\nDATA_FORMAT: FLOAT\n", 17, "DATA_SIZE of three positive integers"),
        ("DATA_FILE: a.dat\nDATA_SIZE: 2 2 2\nDATA_FORMAT: HALF\n", 34, "DATA_FORMAT one of BYTE, SHORT, INT, FLOAT, DOUBLE"),
        ("DATA_FILE: a.dat\nthis line has no colon\n", 17, "a 'KEY: value' line"),
        ("DATA_FILE: a.dat\nDATA_SIZE: 2 2 2\nDATA_FORMAT: INT\nDATA_ENDIAN: MIDDLE\n", 51, "DATA_ENDIAN one of LITTLE, BIG"),
    ],
)
def test_bad_header_lines(tmp_path, text, offset, message):
    header = tmp_path / "t0.bov"
    header.write_text(text)

    with pytest.raises(errors.CorruptIndexError, match=rf"t0\.bov: offset {offset}: expected {message}"):
        convert(header, tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")


def test_data_file_too_short(tmp_path):
    header = write_bov(tmp_path, "t0", grid_values((4, 4, 4), 1, "f4"), "FLOAT", byte_offset=8)
    data = tmp_path / "t0.dat"
    data.write_bytes(data.read_bytes()[:-1])

    with pytest.raises(errors.TruncatedFileError, match=r"t0\.dat: offset 8: expected 256 bytes of values.*found 255 bytes"):
        convert(header, tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")


def test_data_file_missing(tmp_path):
    header = write_bov(tmp_path, "t0", grid_values((2, 2, 2), 1, "f4"), "FLOAT")
    (tmp_path / "t0.dat").unlink()

    with pytest.raises(errors.FileOpenError, match=r"t0\.dat: cannot open"):
        convert(header, tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")


def test_headers_that_disagree(tmp_path):
    write_bov(tmp_path, "t0", grid_values((4, 4, 4), 1, "f4"), "FLOAT")
    write_bov(tmp_path, "t1", grid_values((4, 4, 2), 1, "f4"), "FLOAT")

    with pytest.raises(errors.CorruptIndexError, match=r"t1\.bov: offset \d+: expected DATA_SIZE 4 4 4 as in .*t0\.bov, found 4 4 2"):
        convert([tmp_path / "t0.bov", tmp_path / "t1.bov"], tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")
