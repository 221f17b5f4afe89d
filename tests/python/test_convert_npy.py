"""NumPy conversion: .npy and .npz, shapes, dtypes, byte orders, frames from files and members, bad input."""

from __future__ import annotations


import numpy as np
import pytest

import headrace
from headrace import errors
from headrace.convert import convert, npy
from convert_support import assert_no_output

DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32", "float64"]


def values(shape, dtype="float32", seed=0) -> np.ndarray:
    return (np.random.default_rng(seed).uniform(0, 100, shape)).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, elements, components", [((50,), 50, 1), ((50, 3), 50, 3)])
def test_one_npy_is_one_frame_named_after_the_file(tmp_path, dtype, shape, elements, components):
    array = values(shape, dtype)
    np.save(tmp_path / "pressure.npy", array)

    ds = headrace.open(convert(tmp_path / "pressure.npy", tmp_path / "out.hrc"))

    assert [(f.name, f.dtype, f.components) for f in ds.fields] == [("pressure", dtype, components)]
    np.testing.assert_array_equal(ds.read(0, "pressure"), array.reshape(elements, components))
    assert "grid_dims" not in ds.attributes


@pytest.mark.parametrize("shape, components", [((4, 5, 6), 1), ((4, 5, 6, 3), 3)])
def test_grids_record_dims_origin_and_spacing(tmp_path, shape, components):
    array = values(shape, "float64")
    np.save(tmp_path / "u.npy", array)

    ds = headrace.open(convert(tmp_path / "u.npy", tmp_path / "out.hrc", components=components))  # (4, 5, 6, 3) may
    # be a time series too (docs/converters.md, "Time in arrays")

    assert ds.fields[0].components == components
    np.testing.assert_array_equal(ds.read(0, "u"), array)  # the grid's own shape
    assert list(ds.attributes["grid_dims"]) == [6, 5, 4]
    assert list(ds.attributes["grid_origin"]) == [0.0, 0.0, 0.0]
    assert list(ds.attributes["grid_spacing"]) == [1.0, 1.0, 1.0]
    assert ds.attributes["layout"] == "linear"
    assert ds.frames[0].bbox == ((0.0, 0.0, 0.0), (5.0, 4.0, 3.0))


def test_big_endian_and_fortran_order_are_made_native_and_c_ordered(tmp_path):
    array = values((7, 4), "float64")
    np.save(tmp_path / "a.npy", np.asfortranarray(array.astype(">f8")))

    ds = headrace.open(convert(tmp_path / "a.npy", tmp_path / "out.hrc", field="velocity"))

    assert ds.fields[0].name == "velocity"
    np.testing.assert_array_equal(ds.read(0, "velocity"), array)


@pytest.mark.parametrize("suffix", [".npy", ".npz"])
def test_arrays_larger_than_a_slice_are_written_in_pieces(tmp_path, monkeypatch, suffix):
    monkeypatch.setattr(npy, "_SLICE_BYTES", 100)
    grid = values((6, 5, 4, 3), "float64")
    stored = np.asfortranarray(grid.astype(">f8"))
    if suffix == ".npy":
        np.save(tmp_path / "g.npy", stored)
    else:
        np.savez(tmp_path / "g.npz", t0=stored)

    ds = headrace.open(convert(tmp_path / f"g{suffix}", tmp_path / "out.hrc", components=3))

    np.testing.assert_array_equal(ds.read(0, "g"), grid)


def test_npz_members_are_frames_in_natural_order(tmp_path):
    frames = {f"t{i}": values((10 + i, 2), seed=i) for i in range(12)}
    np.savez(tmp_path / "series.npz", **frames)

    ds = headrace.open(convert(tmp_path / "series.npz", tmp_path / "out.hrc"))

    assert ds.fields[0].name == "series"
    assert len(ds.frames) == 12
    for i in range(12):
        np.testing.assert_array_equal(ds.read(i, "series"), frames[f"t{i}"])  # t2 before t10
        assert ds.frames[i].time == float(i)


def test_directory_of_npy_files_is_frames_of_one_field(tmp_path):
    (tmp_path / "in").mkdir()
    frames = [values((8, 8, 8), seed=i) for i in range(3)]
    for i, array in enumerate(frames):
        np.save(tmp_path / "in" / f"density_{i:04d}.npy", array)

    ds = headrace.open(convert(tmp_path / "in", tmp_path / "out.hrc"))

    assert ds.fields[0].name == "density"
    for i, array in enumerate(frames):
        np.testing.assert_array_equal(ds.read(i, "density"), array)


def test_directory_of_npz_files_is_frames_of_several_fields(tmp_path):
    (tmp_path / "in").mkdir()
    frames = [{"pressure": values((4, 4, 4), seed=i), "velocity": values((4, 4, 4, 3), seed=10 + i)} for i in range(3)]
    for i, frame in enumerate(frames):
        np.savez_compressed(tmp_path / "in" / f"step{i}.npz", **frame)

    ds = headrace.open(convert(tmp_path / "in", tmp_path / "out.hrc"))

    assert [(f.name, f.components) for f in ds.fields] == [("pressure", 1), ("velocity", 3)]
    for i, frame in enumerate(frames):
        np.testing.assert_array_equal(ds.read(i, "pressure"), frame["pressure"])
        np.testing.assert_array_equal(ds.read(i, "velocity"), frame["velocity"])


def test_bad_magic(tmp_path):
    (tmp_path / "a.npy").write_bytes(b"NOTNUMPY" + b"\0" * 100)

    with pytest.raises(errors.BadMagicError, match=r"a\.npy: offset 0: expected the \.npy magic"):
        convert(tmp_path / "a.npy", tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")


def test_truncated_npy(tmp_path):
    np.save(tmp_path / "a.npy", values((100, 3)))
    raw = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "a.npy").write_bytes(raw[:-4])

    with pytest.raises(errors.TruncatedFileError, match=r"a\.npy: offset 128: expected 1200 bytes of float32 values.*found 1196 bytes"):
        convert(tmp_path / "a.npy", tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")


def test_npz_that_is_not_a_zip(tmp_path):
    (tmp_path / "a.npz").write_bytes(b"\x93NUMPY whatever")

    with pytest.raises(errors.BadMagicError, match=r"a\.npz: offset 0: expected an \.npz \(zip\) archive"):
        convert(tmp_path / "a.npz", tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")


def test_a_particle_frame_of_no_elements_is_an_empty_frame(tmp_path):
    frames = [np.arange(12, dtype=np.float32).reshape(4, 3), np.zeros((0, 3), np.float32), np.ones((2, 3), np.float32)]
    for t, frame in enumerate(frames):
        np.save(tmp_path / f"p_{t}.npy", frame)
    ds = headrace.open(convert([tmp_path / f"p_{t}.npy" for t in range(3)], tmp_path / "out.hrc"))
    for t, frame in enumerate(frames):
        np.testing.assert_array_equal(ds.read(t, ds.fields[0].name), frame)


@pytest.mark.parametrize("shape", [(0, 0), (4, 0), (0, 2, 2)])
def test_an_array_that_holds_nothing_to_store(tmp_path, shape):
    np.save(tmp_path / "a.npy", np.zeros(shape, np.float32))

    with pytest.raises(errors.EmptyFieldError, match=r"a\.npy: offset 128: expected at least one element"):
        convert(tmp_path / "a.npy", tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")


@pytest.mark.parametrize("array", [np.zeros(4, np.float16), np.zeros(4, np.complex64), np.zeros((2,) * 6)])
def test_arrays_a_container_cannot_hold(tmp_path, array):
    np.save(tmp_path / "a.npy", array)

    with pytest.raises(errors.UsageError, match=r"a\.npy: "):
        convert(tmp_path / "a.npy", tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")


def test_frames_that_disagree(tmp_path):
    np.save(tmp_path / "f_0.npy", values((10, 3)))
    np.save(tmp_path / "f_1.npy", values((10, 2)))

    with pytest.raises(errors.CorruptIndexError, match=r"f_1\.npy: offset 0: expected float32 x 3 as in .*f_0\.npy, found float32 x 2"):
        convert([tmp_path / "f_0.npy", tmp_path / "f_1.npy"], tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")
