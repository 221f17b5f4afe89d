"""HDF5 conversion through h5py: datasets by pattern (grids, element lists, several fields and files),
H5Part particle steps, dtypes, pieces, and bad input (cut files, shapes that change, patterns that match
nothing, types a container cannot hold, broken chunks)."""

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

h5py = pytest.importorskip("h5py", reason="the HDF5 reader needs h5py (scripts/setup.sh installs it)")

STORABLE = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32", "float64"]


def read(ds: headrace.Dataset, frame: int, field: str, components: int = 1) -> np.ndarray:
    return ds.read(frame, field).reshape(-1, components)


def convert_both_ways(tmp_path: Path, source: Path, *options: str, **keywords) -> tuple[headrace.Dataset, headrace.Dataset]:
    """The same input converted by the Python API and by the CLI, both opened."""
    api = convert(source, tmp_path / "api.hrc", **keywords)
    assert main(["convert", str(source), str(tmp_path / "cli.hrc"), *options]) == 0
    return headrace.open(api), headrace.open(tmp_path / "cli.hrc")


def one_line_error(capsys) -> str:
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1, error
    return error


# ---- datasets by pattern -------------------------------------------------------------------------


def test_root_datasets_by_pattern_are_frames_in_natural_order(tmp_path):
    grids = {f"density_{i}": values((4, 5, 6), seed=i) for i in range(12)}
    with h5py.File(tmp_path / "run.h5", "w") as file:
        for name in reversed(list(grids)):  # written out of order on purpose
            file[name] = grids[name]
        file["other"] = np.zeros(3)

    for ds in convert_both_ways(tmp_path, tmp_path / "run.h5", "--dataset", "density_*", dataset="density_*"):
        assert [(f.name, f.dtype, f.components) for f in ds.fields] == [("density", "float32", 1)]
        assert len(ds.frames) == 12
        for i in range(12):  # density_2 before density_10
            np.testing.assert_array_equal(read(ds, i, "density"), grids[f"density_{i}"].reshape(-1, 1))
            assert ds.frames[i].time == float(i)
        assert list(ds.attributes["grid_dims"]) == [6, 5, 4]
        assert list(ds.attributes["grid_origin"]) == [0.0, 0.0, 0.0]
        assert list(ds.attributes["grid_spacing"]) == [1.0, 1.0, 1.0]
        assert ds.attributes["layout"] == "linear"
        assert ds.attributes["source_format"] == "hdf5"
        assert ds.frames[0].bbox == ((0.0, 0.0, 0.0), (5.0, 4.0, 3.0))


def test_group_patterns_make_named_fields_with_times_from_attributes(tmp_path):
    density = [values((3, 4, 5), seed=i) for i in range(3)]
    velocity = [values((3, 4, 5, 3), "float64", seed=10 + i) for i in range(3)]
    with h5py.File(tmp_path / "run.hdf5", "w") as file:
        for i in range(3):
            group = file.create_group(f"step_{i}")
            group.attrs["time"] = 0.25 * i
            group["density"] = density[i]
            group["velocity"] = velocity[i]

    for ds in convert_both_ways(tmp_path, tmp_path / "run.hdf5", "--dataset", "/step_*/density", "--dataset",
                                "u=step_*/velocity", dataset=["/step_*/density", "u=step_*/velocity"]):
        assert [(f.name, f.dtype, f.components) for f in ds.fields] == [("density", "float32", 1), ("u", "float64", 3)]
        assert [frame.time for frame in ds.frames] == [0.0, 0.25, 0.5]
        for i in range(3):
            np.testing.assert_array_equal(read(ds, i, "density"), density[i].reshape(-1, 1))
            np.testing.assert_array_equal(read(ds, i, "u", 3), velocity[i].reshape(-1, 3))
        assert list(ds.attributes["grid_dims"]) == [5, 4, 3]


def test_a_pattern_does_not_match_across_groups(tmp_path):
    with h5py.File(tmp_path / "run.h5", "w") as file:
        file["a_0"] = np.arange(4.0)
        file["a_1/nested"] = np.arange(5.0)

    ds = headrace.open(convert(tmp_path / "run.h5", tmp_path / "out.hrc", dataset="a_*"))

    assert len(ds.frames) == 1
    np.testing.assert_array_equal(read(ds, 0, "a"), np.arange(4.0).reshape(-1, 1))


def test_element_lists_may_change_length_but_not_components(tmp_path):
    frames = [values((10 + 5 * i, 2), "int32", seed=i) for i in range(3)] + [np.zeros((0, 2), np.int32)]
    with h5py.File(tmp_path / "p.h5", "w") as file:
        for i, array in enumerate(frames):
            file[f"p{i}"] = array

    ds = headrace.open(convert(tmp_path / "p.h5", tmp_path / "out.hrc", dataset="pos=p*"))

    assert [(f.name, f.components) for f in ds.fields] == [("pos", 2)]
    assert "grid_dims" not in ds.attributes
    assert len(ds.frames) == 4  # the last one empty
    for i, array in enumerate(frames):
        np.testing.assert_array_equal(read(ds, i, "pos", 2), array)


@pytest.mark.parametrize("dtype", STORABLE + [">f8", ">i4", ">u2"])
def test_storable_types_are_kept_in_native_byte_order(tmp_path, dtype):
    array = values((6, 2), dtype)
    with h5py.File(tmp_path / "t.h5", "w") as file:
        file["v"] = array

    ds = headrace.open(convert(tmp_path / "t.h5", tmp_path / "out.hrc"))  # the file's one dataset

    assert ds.fields[0].dtype == np.dtype(dtype).newbyteorder("=").name
    np.testing.assert_array_equal(read(ds, 0, "v", 2), array)


def test_float16_and_bool_are_widened(tmp_path):
    half = values(7, "float16")
    flags = np.array([True, False, True, True])
    with h5py.File(tmp_path / "t.h5", "w") as file:
        file["half"] = half
        file["flags"] = flags

    ds = headrace.open(convert(tmp_path / "t.h5", tmp_path / "out.hrc", dataset=["half", "flags"]))

    assert [(f.name, f.dtype) for f in ds.fields] == [("half", "float32"), ("flags", "uint8")]
    np.testing.assert_array_equal(read(ds, 0, "half"), half.astype(np.float32).reshape(-1, 1))
    np.testing.assert_array_equal(read(ds, 0, "flags"), flags.astype(np.uint8).reshape(-1, 1))


def test_compressed_chunked_frames_larger_than_a_slice_are_written_in_pieces(tmp_path, monkeypatch):
    monkeypatch.setattr(_arrays, "SLICE_BYTES", 240)  # less than a z plane (960 bytes): a row (192 bytes) at a time
    grid = values((6, 5, 8, 3), "float64")
    with h5py.File(tmp_path / "g.h5", "w") as file:
        file.create_dataset("g_0", data=grid, chunks=(2, 5, 4, 3), compression="gzip")
        file.create_dataset("g_1", data=grid[::-1], chunks=(2, 5, 4, 3), compression="gzip")
    source = open_source(tmp_path / "g.h5", dataset="g_*", components=3)
    pieces = list(next(iter(source.frames())).pieces)
    assert [p.array.shape for p in pieces] == [(8, 3)] * 30

    ds = headrace.open(convert(tmp_path / "g.h5", tmp_path / "out.hrc", dataset="g_*", components=3))

    np.testing.assert_array_equal(read(ds, 0, "g", 3), grid.reshape(-1, 3))
    np.testing.assert_array_equal(read(ds, 1, "g", 3), grid[::-1].reshape(-1, 3))


def test_several_files_are_frames_one_after_another(tmp_path):
    frames = [values((2, 3, 4), seed=i) for i in range(4)]
    for f in range(2):
        with h5py.File(tmp_path / f"part{f}.h5", "w") as file:
            for s in range(2):
                file[f"rho_{s}"] = frames[2 * f + s]

    for ds in convert_both_ways(tmp_path, tmp_path / "part*.h5", "--dataset", "rho_*", dataset="rho_*"):
        assert len(ds.frames) == 4
        for i, array in enumerate(frames):
            np.testing.assert_array_equal(read(ds, i, "rho"), array.reshape(-1, 1))


def test_hdf5_is_known_by_its_signature(tmp_path):
    with h5py.File(tmp_path / "noext", "w") as file:
        file["v"] = np.arange(3.0)

    assert guess_format([tmp_path / "noext"]) is InputFormat.HDF5
    ds = headrace.open(convert(tmp_path / "noext", tmp_path / "out.hrc"))
    np.testing.assert_array_equal(read(ds, 0, "v"), np.arange(3.0).reshape(-1, 1))


def test_several_datasets_and_no_pattern_asks_for_one(tmp_path, capsys):
    with h5py.File(tmp_path / "run.h5", "w") as file:
        file["a"] = np.arange(3.0)
        file["b"] = np.arange(3.0)

    assert main(["convert", str(tmp_path / "run.h5"), str(tmp_path / "out.hrc")]) == 2

    error = one_line_error(capsys)
    assert "--dataset PATTERN" in error and "/a, /b" in error
    assert_no_output(tmp_path / "out.hrc")


# ---- H5Part --------------------------------------------------------------------------------------


def write_h5part(path: Path, counts: list[int], times: bool = True) -> list[dict[str, np.ndarray]]:
    """Steps of particles, as H5Part writes them: ``Step#N`` groups of 1-D datasets."""
    steps = []
    with h5py.File(path, "w") as file:
        for number, count in enumerate(counts):
            rng = np.random.default_rng(number)
            step = {axis: rng.uniform(-1, 1, count).astype(np.float32) for axis in "xyz"}
            step["id"] = np.arange(count, dtype=np.int64) + 1000 * number
            step["px"] = rng.normal(size=count)
            group = file.create_group(f"Step#{number}")
            if times:
                group.attrs["Time"] = 0.1 * number
            for name, array in step.items():
                group[name] = array
            steps.append(step)
    return steps


def test_h5part_steps_become_frames_with_positions_and_fields(tmp_path):
    steps = write_h5part(tmp_path / "run.h5part", [5 + number for number in range(12)])

    for ds in convert_both_ways(tmp_path, tmp_path / "run.h5part"):
        assert [(f.name, f.dtype, f.components) for f in ds.fields] == [
            ("position", "float32", 3), ("id", "int64", 1), ("px", "float64", 1)]
        assert ds.attributes["source_format"] == "h5part"
        assert len(ds.frames) == 12
        for number, step in enumerate(steps):  # Step#10 after Step#9
            position = np.stack([step["x"], step["y"], step["z"]], axis=1)
            np.testing.assert_array_equal(read(ds, number, "position", 3), position)
            np.testing.assert_array_equal(read(ds, number, "id"), step["id"].reshape(-1, 1))
            np.testing.assert_array_equal(read(ds, number, "px"), step["px"].reshape(-1, 1))
            assert ds.frames[number].time == pytest.approx(0.1 * number)
            low, high = ds.frames[number].bbox
            np.testing.assert_allclose(low, position.min(axis=0), rtol=1e-7)
            np.testing.assert_allclose(high, position.max(axis=0), rtol=1e-7)


def test_an_h5_file_of_steps_is_read_as_h5part_and_times_default_to_step_numbers(tmp_path):
    steps = write_h5part(tmp_path / "run.h5", [4, 6], times=False)

    ds = headrace.open(convert(tmp_path / "run.h5", tmp_path / "out.hrc"))

    assert ds.attributes["source_format"] == "h5part"
    assert [frame.time for frame in ds.frames] == [0.0, 1.0]
    np.testing.assert_array_equal(read(ds, 1, "id"), steps[1]["id"].reshape(-1, 1))


def test_h5part_with_mixed_coordinate_types_takes_their_common_type(tmp_path):
    with h5py.File(tmp_path / "p.h5part", "w") as file:
        group = file.create_group("Step#0")
        group["x"] = np.arange(3, dtype=np.float32)
        group["y"] = np.arange(3, dtype=np.float64) / 3
        group["z"] = np.arange(3, dtype=np.int16)

    ds = headrace.open(convert(tmp_path / "p.h5part", tmp_path / "out.hrc"))

    assert ds.fields[0].dtype == "float64"
    expected = np.stack([np.arange(3.0), np.arange(3.0) / 3, np.arange(3.0)], axis=1)
    np.testing.assert_array_equal(read(ds, 0, "position", 3), expected)


def test_h5part_steps_without_particles_are_empty_frames(tmp_path):
    steps = write_h5part(tmp_path / "p.h5part", [3, 0, 2])
    with h5py.File(tmp_path / "p.h5part", "a") as file:
        file.create_group("Step#3")  # no datasets at all

    source = open_source(tmp_path / "p.h5part")
    # As the writer does: each frame's pieces before the next frame.
    frames = [(frame.bbox, [(piece.field, piece.array.shape) for piece in frame.pieces]) for frame in source.frames()]
    assert frames[1] == (None, [("position", (0, 3)), ("id", (0, 1)), ("px", (0, 1))])
    assert frames[3] == (None, [("position", (0, 3)), ("id", (0, 1)), ("px", (0, 1))])

    for ds in convert_both_ways(tmp_path, tmp_path / "p.h5part"):
        assert len(ds.frames) == 4
        for number in (1, 3):
            assert read(ds, number, "position", 3).shape == (0, 3)
            assert read(ds, number, "px").shape == (0, 1)
        np.testing.assert_array_equal(read(ds, 2, "id"), steps[2]["id"].reshape(-1, 1))


# ---- bad input -----------------------------------------------------------------------------------


def test_truncated_file(tmp_path, capsys):
    with h5py.File(tmp_path / "run.h5", "w") as file:
        file["d_0"] = values((20, 20, 20))
    data = (tmp_path / "run.h5").read_bytes()
    (tmp_path / "run.h5").write_bytes(data[: len(data) // 2])

    with pytest.raises(errors.TruncatedFileError, match=rf"run\.h5: offset {len(data) // 2}: expected {len(data)} bytes"):
        convert(tmp_path / "run.h5", tmp_path / "out.hrc", dataset="d_*")
    assert main(["convert", str(tmp_path / "run.h5"), str(tmp_path / "out.hrc"), "--dataset", "d_*"]) == 1

    assert one_line_error(capsys).startswith(f"headrace convert: {tmp_path / 'run.h5'}: offset ")
    assert_no_output(tmp_path / "out.hrc")


def test_not_hdf5(tmp_path):
    (tmp_path / "run.h5").write_bytes(b"not an hdf5 file at all" * 4)

    with pytest.raises(errors.BadMagicError, match=r"run\.h5: offset 0: expected the HDF5 signature"):
        convert(tmp_path / "run.h5", tmp_path / "out.hrc", dataset="x")
    assert_no_output(tmp_path / "out.hrc")


def test_a_pattern_that_matches_nothing(tmp_path, capsys):
    with h5py.File(tmp_path / "run.h5", "w") as file:
        file["density_0"] = np.zeros(3)

    assert main(["convert", str(tmp_path / "run.h5"), str(tmp_path / "out.hrc"), "--dataset", "pressure_*"]) == 1

    error = one_line_error(capsys)
    assert error.startswith(f"headrace convert: {tmp_path / 'run.h5'}: dataset pressure_*: expected datasets matching")
    assert "found none (datasets: /density_0)" in error
    assert_no_output(tmp_path / "out.hrc")


def test_a_grid_whose_shape_changes_between_steps(tmp_path, capsys):
    with h5py.File(tmp_path / "run.h5", "w") as file:
        file["step_0/rho"] = np.zeros((4, 5, 6), np.float32)
        file["step_1/rho"] = np.zeros((4, 5, 7), np.float32)

    with pytest.raises(errors.CorruptIndexError, match=r"dataset /step_1/rho: expected the shape of /step_0/rho, "
                                                       r"grid \(4, 5, 6\), found grid \(4, 5, 7\)"):
        convert(tmp_path / "run.h5", tmp_path / "out.hrc", dataset="/step_*/rho")
    assert main(["convert", str(tmp_path / "run.h5"), str(tmp_path / "out.hrc"), "--dataset", "/step_*/rho"]) == 1

    assert f"{tmp_path / 'run.h5'}: dataset /step_1/rho: expected" in one_line_error(capsys)
    assert_no_output(tmp_path / "out.hrc")


def test_a_type_that_changes_between_steps(tmp_path):
    with h5py.File(tmp_path / "run.h5", "w") as file:
        file["rho_0"] = np.zeros(4, np.float32)
        file["rho_1"] = np.zeros(4, np.float64)

    with pytest.raises(errors.CorruptIndexError, match=r"dataset /rho_1: expected dtype float32 as /rho_0 has"):
        convert(tmp_path / "run.h5", tmp_path / "out.hrc", dataset="rho_*")
    assert_no_output(tmp_path / "out.hrc")


@pytest.mark.parametrize("data", [np.zeros(4, np.complex64), np.array([b"ab", b"cd"]),
                                  np.zeros(3, dtype=[("a", "f4"), ("b", "i4")])], ids=["complex", "bytes", "compound"])
def test_a_type_a_container_cannot_hold(tmp_path, capsys, data):
    with h5py.File(tmp_path / "run.h5", "w") as file:
        file["values"] = data

    assert main(["convert", str(tmp_path / "run.h5"), str(tmp_path / "out.hrc"), "--dataset", "values"]) == 1

    error = one_line_error(capsys)
    assert error.startswith(f"headrace convert: {tmp_path / 'run.h5'}: dataset /values: expected numbers a container "
                            "holds (uint8, int8")
    assert f"found dtype {data.dtype}" in error
    assert_no_output(tmp_path / "out.hrc")


def test_a_broken_chunk_stops_the_conversion_and_leaves_nothing(tmp_path, capsys):
    with h5py.File(tmp_path / "run.h5", "w") as file:
        file.create_dataset("rho_0", data=values((8, 8, 8)), chunks=(4, 8, 8), compression="gzip")
        broken = file.create_dataset("rho_1", data=values((8, 8, 8), seed=1), chunks=(4, 8, 8), compression="gzip")
        chunk = broken.id.get_chunk_info(1)
    with open(tmp_path / "run.h5", "r+b") as handle:
        handle.seek(chunk.byte_offset)
        handle.write(b"\xff" * chunk.size)

    assert main(["convert", str(tmp_path / "run.h5"), str(tmp_path / "out.hrc"), "--dataset", "rho_*"]) == 1

    error = one_line_error(capsys)
    assert error.startswith(f"headrace convert: {tmp_path / 'run.h5'}: dataset /rho_1: expected values HDF5 can read")
    assert_no_output(tmp_path / "out.hrc")


def test_h5part_datasets_of_one_step_with_different_counts(tmp_path, capsys):
    write_h5part(tmp_path / "p.h5part", [4, 4])
    with h5py.File(tmp_path / "p.h5part", "a") as file:
        del file["Step#1/y"]
        file["Step#1/y"] = np.zeros(3, np.float32)

    assert main(["convert", str(tmp_path / "p.h5part"), str(tmp_path / "out.hrc")]) == 1

    error = one_line_error(capsys)
    assert error.startswith(f"headrace convert: {tmp_path / 'p.h5part'}: dataset /Step#1/")
    assert "expected 4 particles as /Step#1/id has, found 3" in error
    assert_no_output(tmp_path / "out.hrc")


def test_h5part_steps_with_different_datasets(tmp_path):
    write_h5part(tmp_path / "p.h5part", [4, 4])
    with h5py.File(tmp_path / "p.h5part", "a") as file:
        del file["Step#1/px"]

    with pytest.raises(errors.CorruptIndexError, match=r"group /Step#1: expected the datasets of /Step#0 .*missing px"):
        convert(tmp_path / "p.h5part", tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")


def test_h5part_type_that_changes_between_steps(tmp_path):
    write_h5part(tmp_path / "p.h5part", [4, 4])
    with h5py.File(tmp_path / "p.h5part", "a") as file:
        del file["Step#1/id"]
        file["Step#1/id"] = np.arange(4, dtype=np.int32)

    with pytest.raises(errors.CorruptIndexError, match=r"dataset /Step#1/id: expected dtype int64 as /Step#0/id has"):
        convert(tmp_path / "p.h5part", tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")


def test_options_of_other_formats_are_refused(tmp_path, capsys):
    write_h5part(tmp_path / "p.h5part", [2])

    assert main(["convert", str(tmp_path / "p.h5part"), str(tmp_path / "out.hrc"), "--dataset", "x"]) == 2

    assert "--dataset does not apply to format h5part" in one_line_error(capsys)


def test_json_summary_names_the_format(tmp_path, capsys):
    write_h5part(tmp_path / "p.h5part", [3, 2])

    assert main(["convert", str(tmp_path / "p.h5part"), str(tmp_path / "out.hrc"), "--json"]) == 0

    summary = json.loads(capsys.readouterr().out)
    assert summary["format"] == "h5part"
    assert [(f["name"], f["elements"]) for f in summary["fields"]] == [("position", 5), ("id", 5), ("px", 5)]
