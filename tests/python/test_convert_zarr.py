"""zarr conversion (stores written by zarr-python, formats 3 and 2): a group's arrays or one array over
time, the time axis, dtypes, reading chunk by chunk in slabs, and bad input (not a store, arrays to pick,
types a container cannot hold, a chunk that cannot be decoded)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import headrace
from headrace import errors
from headrace.cli.main import main
from headrace.convert import _arrays, convert, open_source
from headrace.convert.formats import InputFormat, guess_format
from convert_support import assert_no_output, values

zarr = pytest.importorskip("zarr", reason="the zarr reader needs the zarr package (scripts/setup.sh installs it)")

STORABLE = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32", "float64"]


def read(ds: headrace.Dataset, frame: int, field: str, components: int = 1) -> np.ndarray:
    return ds.read(frame, field).reshape(-1, components)


def one_line_error(capsys) -> str:
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1, error
    return error


def convert_both_ways(tmp_path: Path, source: Path, *options: str, **keywords) -> list[headrace.Dataset]:
    """The same input converted by the Python API and by the CLI, both opened."""
    api = convert(source, tmp_path / "api.hrc", **keywords)
    assert main(["convert", str(source), str(tmp_path / "cli.hrc"), *options]) == 0
    return [headrace.open(api), headrace.open(tmp_path / "cli.hrc")]


def flow_group(path: Path, zarr_format: int = 3, frames: int = 3) -> dict[str, np.ndarray]:
    """A group as a simulation writes it: a scalar and a vector grid over time, and a time coordinate."""
    arrays = {"density": values((frames, 4, 5, 6), seed=1), "velocity": values((frames, 4, 5, 6, 3), "float64", seed=2),
              "time": 0.5 * np.arange(frames)}
    group = zarr.open_group(path, mode="w", zarr_format=zarr_format)
    for name, array in arrays.items():
        chunks = (1, 2, 5, 3) + array.shape[4:] if array.ndim >= 4 else array.shape
        group.create_array(name, shape=array.shape, chunks=chunks, dtype=array.dtype)[...] = array
    return arrays


@pytest.mark.parametrize("zarr_format", [3, 2])
def test_a_group_of_arrays_over_time(tmp_path, zarr_format):
    arrays = flow_group(tmp_path / "flow.zarr", zarr_format)

    for ds in convert_both_ways(tmp_path, tmp_path / "flow.zarr"):
        assert [(f.name, f.dtype, f.components) for f in ds.fields] == [("density", "float32", 1),
                                                                        ("velocity", "float64", 3)]
        assert len(ds.frames) == 3
        for frame in range(3):
            np.testing.assert_array_equal(read(ds, frame, "density"), arrays["density"][frame].reshape(-1, 1))
            np.testing.assert_array_equal(read(ds, frame, "velocity", 3), arrays["velocity"][frame].reshape(-1, 3))
        assert [frame.time for frame in ds.frames] == [0.0, 0.5, 1.0]
        assert list(ds.attributes["grid_dims"]) == [6, 5, 4]
        assert list(ds.attributes["grid_origin"]) == [0.0, 0.0, 0.0]
        assert list(ds.attributes["grid_spacing"]) == [1.0, 1.0, 1.0]
        assert ds.attributes["layout"] == "linear"
        assert list(ds.attributes["zarr_format"]) == [zarr_format]
        assert ds.frames[0].bbox == ((0.0, 0.0, 0.0), (5.0, 4.0, 3.0))


def test_variables_pick_arrays_of_the_group(tmp_path):
    arrays = flow_group(tmp_path / "flow.zarr")

    for ds in convert_both_ways(tmp_path, tmp_path / "flow.zarr", "--variables", "velocity", variables=["velocity"]):
        assert [f.name for f in ds.fields] == ["velocity"]
        np.testing.assert_array_equal(read(ds, 2, "velocity", 3), arrays["velocity"][2].reshape(-1, 3))


@pytest.mark.parametrize("shape, components", [((4, 50), 1), ((4, 50, 3), 3), ((4, 0, 3), 3)])
def test_an_array_store_is_one_field_named_after_the_store(tmp_path, shape, components):
    array = values(shape, "int32")
    zarr.open_array(tmp_path / "tracers.zarr", mode="w", shape=shape, chunks=(2, 16) + shape[2:], dtype="int32")[...] = array

    ds = headrace.open(convert(tmp_path / "tracers.zarr", tmp_path / "out.hrc"))

    assert [(f.name, f.components) for f in ds.fields] == [("tracers", components)]
    assert "grid_dims" not in ds.attributes
    for frame in range(4):
        np.testing.assert_array_equal(read(ds, frame, "tracers", components), array[frame].reshape(-1, components))
    assert [frame.time for frame in ds.frames] == [0.0, 1.0, 2.0, 3.0]


def test_the_time_axis_may_be_another(tmp_path):
    array = values((3, 4, 5, 6))  # (Z, Y, X, T)
    zarr.open_array(tmp_path / "v.zarr", mode="w", shape=array.shape, chunks=(2, 2, 5, 2), dtype="float32")[...] = array

    for ds in convert_both_ways(tmp_path, tmp_path / "v.zarr", "--time-axis", "3", time_axis=3):
        assert len(ds.frames) == 6
        for frame in range(6):
            np.testing.assert_array_equal(read(ds, frame, "v"), array[..., frame].reshape(-1, 1))
        assert list(ds.attributes["grid_dims"]) == [5, 4, 3]


# Format 2 keeps the byte order in the dtype; format 3 in its bytes codec, so its arrays read native.
@pytest.mark.parametrize("zarr_format, dtype", [(f, d) for f in (3, 2) for d in STORABLE] + [(2, ">f8"), (2, ">i4")])
def test_storable_types_are_kept_in_native_byte_order(tmp_path, zarr_format, dtype):
    array = values((2, 7), dtype)
    zarr.open_array(tmp_path / "a.zarr", mode="w", shape=array.shape, dtype=array.dtype,
                    zarr_format=zarr_format)[...] = array

    ds = headrace.open(convert(tmp_path / "a.zarr", tmp_path / "out.hrc"))

    assert ds.fields[0].dtype == np.dtype(dtype).newbyteorder("=").name
    for frame in range(2):
        np.testing.assert_array_equal(read(ds, frame, "a"), array[frame].reshape(-1, 1))


def test_float16_and_bool_are_widened(tmp_path):
    group = zarr.open_group(tmp_path / "g.zarr", mode="w")
    half, flags = values((2, 5), "float16"), np.array([[True, False], [False, True]])
    group.create_array("half", shape=half.shape, dtype=half.dtype)[...] = half
    group.create_array("flags", shape=flags.shape, dtype=flags.dtype)[...] = flags

    ds = headrace.open(convert(tmp_path / "g.zarr", tmp_path / "out.hrc", variables=["half", "flags"]))

    assert [(f.name, f.dtype) for f in ds.fields] == [("half", "float32"), ("flags", "uint8")]
    np.testing.assert_array_equal(read(ds, 1, "half"), half[1].astype(np.float32).reshape(-1, 1))
    np.testing.assert_array_equal(read(ds, 1, "flags"), flags[1].astype(np.uint8).reshape(-1, 1))


def test_frames_are_read_in_slabs_of_whole_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(_arrays, "SLICE_BYTES", 3 * 6 * 4 * 4)  # three (Y, X) planes of float32; chunks of 2 planes
    array = values((2, 8, 6, 4))
    zarr.open_array(tmp_path / "s.zarr", mode="w", shape=array.shape, chunks=(1, 2, 3, 4), dtype="float32")[...] = array

    source = open_source(tmp_path / "s.zarr")
    pieces = [[piece.array.shape for piece in frame.pieces] for frame in source.frames()]
    assert pieces == [[(48, 1)] * 4] * 2  # two planes (one chunk deep) at a time, not three

    ds = headrace.open(convert(tmp_path / "s.zarr", tmp_path / "out.hrc"))
    for frame in range(2):
        np.testing.assert_array_equal(read(ds, frame, "s"), array[frame].reshape(-1, 1))


def test_slabs_cut_whole_rows_in_c_order():
    assert list(_arrays.slabs((4, 3), 8)) == [(slice(0, 4),)]
    _arrays_budget = _arrays.SLICE_BYTES
    try:
        _arrays.SLICE_BYTES = 16
        assert list(_arrays.slabs((2, 3), 8)) == [(0, slice(0, 2)), (0, slice(2, 3)), (1, slice(0, 2)),
                                                  (1, slice(2, 3))]
        assert list(_arrays.slabs((5, 2), 8, chunks=(1, 2))) == [(slice(i, i + 1),) for i in range(5)]
        assert list(_arrays.slabs((0, 4), 8)) == []
    finally:
        _arrays.SLICE_BYTES = _arrays_budget


def test_a_store_without_the_zarr_suffix_is_known_as_one(tmp_path):
    flow_group(tmp_path / "flow")

    assert guess_format([tmp_path / "flow"]) is InputFormat.ZARR
    ds = headrace.open(convert(tmp_path / "flow", tmp_path / "out.hrc"))
    assert [f.name for f in ds.fields] == ["density", "velocity"]


def test_json_summary_names_the_format(tmp_path, capsys):
    flow_group(tmp_path / "flow.zarr")

    assert main(["convert", str(tmp_path / "flow.zarr"), str(tmp_path / "out.hrc"), "--json"]) == 0

    summary = json.loads(capsys.readouterr().out)
    assert summary["format"] == "zarr"
    assert [(f["name"], f["elements"]) for f in summary["fields"]] == [("density", 360), ("velocity", 360)]


# ---- bad input -----------------------------------------------------------------------------------


def test_a_folder_that_is_not_a_store(tmp_path, capsys):
    (tmp_path / "empty.zarr").mkdir()

    assert main(["convert", str(tmp_path / "empty.zarr"), str(tmp_path / "out.hrc")]) == 1

    assert one_line_error(capsys).startswith(f"headrace convert: {tmp_path / 'empty.zarr'}: offset 0: expected a zarr "
                                             "store")
    assert_no_output(tmp_path / "out.hrc")


def test_an_array_that_is_not_there(tmp_path, capsys):
    flow_group(tmp_path / "flow.zarr")

    assert main(["convert", str(tmp_path / "flow.zarr"), str(tmp_path / "out.hrc"), "--variables", "pressure"]) == 1

    error = one_line_error(capsys)
    assert error.startswith(f"headrace convert: {tmp_path / 'flow.zarr'}: array pressure: expected an array of the group")
    assert "arrays: " in error and "density" in error
    assert_no_output(tmp_path / "out.hrc")


def test_arrays_of_different_frame_counts_must_be_picked(tmp_path, capsys):
    flow_group(tmp_path / "flow.zarr")
    zarr.open_group(tmp_path / "flow.zarr", mode="a").create_array("mask", shape=(5, 4), dtype="uint8")

    assert main(["convert", str(tmp_path / "flow.zarr"), str(tmp_path / "out.hrc")]) == 2

    error = one_line_error(capsys)
    assert "density (3), mask (5), velocity (3)" in error and "--variables" in error
    assert_no_output(tmp_path / "out.hrc")


def test_picked_arrays_of_different_frame_counts(tmp_path, capsys):
    flow_group(tmp_path / "flow.zarr")
    zarr.open_group(tmp_path / "flow.zarr", mode="a").create_array("mask", shape=(5, 4), dtype="uint8")

    assert main(["convert", str(tmp_path / "flow.zarr"), str(tmp_path / "out.hrc"), "--variables", "density,mask"]) == 1

    assert one_line_error(capsys).endswith("array mask: expected 3 frames along axis 0 as array density has, found 5")
    assert_no_output(tmp_path / "out.hrc")


def test_a_type_a_container_cannot_hold(tmp_path, capsys):
    group = zarr.open_group(tmp_path / "g.zarr", mode="w")
    group.create_array("z", shape=(2, 3), dtype="complex64")

    assert main(["convert", str(tmp_path / "g.zarr"), str(tmp_path / "out.hrc")]) == 1

    error = one_line_error(capsys)
    assert error.startswith(f"headrace convert: {tmp_path / 'g.zarr'}: array z: expected numbers a container holds")
    assert error.endswith("found dtype complex64")
    assert_no_output(tmp_path / "out.hrc")


def test_a_time_axis_the_array_lacks(tmp_path):
    zarr.open_array(tmp_path / "a.zarr", mode="w", shape=(2, 3), dtype="float32")

    with pytest.raises(errors.BadDataError, match=r"a\.zarr: array a: expected an axis 2 for time, found shape \(2, 3\)"):
        convert(tmp_path / "a.zarr", tmp_path / "out.hrc", time_axis=2)
    assert_no_output(tmp_path / "out.hrc")


def test_a_chunk_that_cannot_be_decoded_stops_the_conversion_and_leaves_nothing(tmp_path, capsys):
    arrays = flow_group(tmp_path / "flow.zarr")
    assert arrays["density"].shape[0] == 3
    chunk = tmp_path / "flow.zarr" / "density" / "c" / "2" / "0" / "0" / "0"  # frame 2's first chunk
    chunk.write_bytes(chunk.read_bytes()[:10])

    assert main(["convert", str(tmp_path / "flow.zarr"), str(tmp_path / "out.hrc")]) == 1

    error = one_line_error(capsys)
    assert error.startswith(f"headrace convert: {tmp_path / 'flow.zarr'}: array density: expected chunks of frame 2 "
                            "zarr can decode, found an error")
    assert_no_output(tmp_path / "out.hrc")


def test_several_stores_are_refused(tmp_path, capsys):
    flow_group(tmp_path / "a.zarr")
    flow_group(tmp_path / "b.zarr")

    assert main(["convert", str(tmp_path / "a.zarr"), str(tmp_path / "b.zarr"), str(tmp_path / "out.hrc")]) == 2

    assert "converts one store at a time" in one_line_error(capsys)
