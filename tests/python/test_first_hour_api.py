"""Issue 35, the Python API as users of NumPy, h5py, zarr and xarray expect it: IndexError for indexes,
``__array__`` and iteration of lazy arrays, a Dataset that is a mapping of its fields, streamed grids in
read()'s natural shape in every layout, arrays that stay valid after a release, and a foreign file
named as such. Files come from the real libraries (numpy, h5py, netCDF4, zarr) and headrace's own
generators."""

from __future__ import annotations

import typing

import numpy as np
import pytest

import headrace
import headrace.lazy
from headrace import errors
from headrace.workloads import streamlines
from headrace.cli.main import main
from headrace.generate import generate_flow, generate_volume


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    """A (t, z, y, x) series written by numpy, converted frame by frame (one .npy a frame)."""
    folder = tmp_path_factory.mktemp("series")
    values = np.random.default_rng(3).random((4, 6, 7, 8), dtype=np.float32)
    for t in range(4):
        np.save(folder / f"density_{t:03d}.npy", values[t])
    out = folder / "series.hrc"
    assert main(["convert", str(folder), str(out)]) == 0
    return out, values


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    """One flow field (2 frames) in native blocks and in Hilbert partitions on a grid neither divides,
    and a linear volume; {name: path}."""
    folder = tmp_path_factory.mktemp("layouts")
    blocks = generate_flow(folder / "blocks.hrc", dims=(49, 33, 25), block=(8, 8, 8), frames=2, seed=4,
                           chunk_size_bytes=8192)
    hilbert = folder / "hilbert.hrc"
    streamlines.convert_to_hilbert(blocks, hilbert, bits=3, chunk_pages=3)
    volume = generate_volume(folder / "volume.hrc", dims=(20, 18, 16), frames=2)
    return {"blocks": blocks, "hilbert": hilbert, "volume": volume}


def test_out_of_range_indexes_are_index_errors_and_usage_errors(series):
    path, _ = series
    ds = headrace.open(path)
    for bad in (lambda: ds.read(4), lambda: ds.read(-5), lambda: ds["density"][4], lambda: ds.element_count(9, "density"),
                lambda: ds.read(0, "density", region=(6,))):
        with pytest.raises(IndexError, match="out of range") as caught:
            bad()
        assert isinstance(caught.value, errors.UsageError) and isinstance(caught.value, errors.OutOfRangeError)
    with ds.stream(device="cpu") as stream, pytest.raises(IndexError, match="frame 7 out of range"):
        stream.seek(7)
    with pytest.raises(errors.UsageError, match="expected an integer frame index"):
        ds.read("0")


def test_lazy_arrays_convert_iterate_and_have_a_length(series):
    path, values = series
    array = headrace.open(path).array("density")
    assert len(array) == 4 and array.shape == (4, 6, 7, 8)
    np.testing.assert_array_equal(np.asarray(array), values)
    np.testing.assert_array_equal(np.array(array, dtype=np.float64), values.astype(np.float64))
    frames = list(array)
    assert len(frames) == 4
    for t, frame in enumerate(frames):
        np.testing.assert_array_equal(frame, values[t])


def test_a_dataset_is_a_read_only_mapping_of_its_fields(tmp_path):
    import h5py

    source = tmp_path / "run.h5"
    density = np.arange(2 * 4 * 5 * 6, dtype=np.float32).reshape(2, 4, 5, 6)
    with h5py.File(source, "w") as f:
        for t in range(2):
            f[f"step{t}/density"] = density[t]
    out = tmp_path / "run.hrc"
    assert main(["convert", str(source), str(out), "--dataset", "/step*/density"]) == 0
    ds = headrace.open(out)
    assert list(ds) == ["density"] == list(ds.keys()) and len(ds) == 1
    assert "density" in ds and "pressure" not in ds and 3 not in ds
    np.testing.assert_array_equal(ds["density"][1], density[1])
    np.testing.assert_array_equal(np.asarray(ds["density"]), density)
    assert [name for name, _ in ds.items()] == ["density"]
    with pytest.raises(KeyError, match="pressure"):
        ds["pressure"]
    with pytest.raises(KeyError, match="named by strings"):
        ds[0]  # type: ignore[index]
    assert ds.get("pressure") is None
    assert {ds: 1}[ds] == 1 and ds == ds and ds != headrace.open(out)  # hashable; equal only to itself


def test_streamed_grids_have_reads_natural_shape_in_every_layout(layouts):
    for name, path in layouts.items():
        ds = headrace.open(path)
        field = ds.fields[0].name
        with ds.stream(device="cpu") as stream:
            for frame in stream:
                expected = ds.read(frame.index, field)
                taken = np.asarray(frame[field])
                assert frame[field].shape == expected.shape, name
                np.testing.assert_array_equal(taken, expected, err_msg=name)
        with ds.stream(device="cpu", stored_order=True) as stream:
            for frame in stream:
                stored = ds.read(frame.index, field, stored_order=True)
                assert frame[field].shape == stored.shape == (ds.element_count(frame.index, field), stored.shape[1])
                np.testing.assert_array_equal(np.asarray(frame[field]), stored, err_msg=name)


def test_a_padded_hilbert_field_streams_as_its_grid_not_its_curve(layouts):
    ds = headrace.open(layouts["hilbert"])
    assert ds.element_count(0, "velocity") > 49 * 33 * 25  # partitions at the far edges stored whole
    with ds.stream(device="cpu", fields=["velocity"]) as stream:
        frame = next(stream)
        assert frame["velocity"].shape == (25, 33, 49, 3)
        np.testing.assert_array_equal(np.asarray(frame["velocity"]), headrace.open(layouts["blocks"]).read(0, "velocity"))


def test_the_grid_order_twin_matches_the_layouts_own_map(layouts):
    """gather_grid_order_host (the GPU kernel's CPU twin) against GridLayout.positions (the read path's map)."""
    from headrace import _ext
    from headrace.arrays import grid_layout

    ds = headrace.open(layouts["hilbert"])
    layout = grid_layout(ds, 0, "velocity")
    stored = ds.read(0, "velocity", stored_order=True)
    nx, ny, nz = layout.dims
    z, y, x = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    expected = stored[layout.positions(z, y, x).ravel()]
    ux, uy, uz = layout.unit
    lz, ly, lx = np.meshgrid(np.arange(uz), np.arange(uy), np.arange(ux), indexing="ij")
    local = layout.positions(lz, ly, lx).ravel().astype(np.uint32)
    natural = np.empty_like(expected)
    _ext.gather_grid_order_host(stored.reshape(-1).view(np.uint8), natural.reshape(-1).view(np.uint8), layout.dims,
                                layout.unit, local, 12)
    np.testing.assert_array_equal(natural, expected)


@pytest.mark.parametrize("take", ["asarray", "numpy", "from_dlpack"])
def test_arrays_taken_before_an_explicit_release_keep_their_values(series, take):
    path, values = series
    ds = headrace.open(path)
    grab = {"asarray": np.asarray, "numpy": lambda f: f.numpy(), "from_dlpack": np.from_dlpack}[take]
    kept = []
    with ds.stream(device="cpu", prefetch=2) as stream:
        for frame in stream:
            kept.append(grab(frame["density"]))
            frame.release()
    for t, array in enumerate(kept):
        np.testing.assert_array_equal(array, values[t])


def test_opening_another_format_says_to_convert_it(tmp_path):
    import h5py
    import netCDF4
    import zarr

    h5 = tmp_path / "run.h5"
    with h5py.File(h5, "w") as f:
        f["density"] = np.zeros((4, 4, 4), np.float32)
    nc = tmp_path / "era.nc"
    with netCDF4.Dataset(nc, "w", format="NETCDF3_CLASSIC") as f:
        f.createDimension("x", 3)
        f.createVariable("t2m", "f4", ("x",))[:] = [1, 2, 3]
    store = tmp_path / "run.zarr"
    zarr.open(str(store), mode="w", shape=(4, 4), dtype="f4")
    for path, error in ((h5, errors.BadMagicError), (nc, errors.BadMagicError), (store, IsADirectoryError)):
        # the message: "<path>: ... not a headrace container ...; if it holds data of another format ..., convert it first: ..."
        with pytest.raises(error, match=rf"convert it first: headrace convert {path} {path.stem}\.hrc"):
            headrace.open(path)
    assert main(["inspect", str(nc)]) == 1


def test_the_api_says_what_it_does_without_the_docs():
    assert len(headrace.open.__doc__.splitlines()) > 8
    names = {"FrameStream": headrace.FrameStream, "FieldArray": headrace.lazy.FieldArray}
    assert typing.get_type_hints(headrace.Dataset.stream, localns=names)["return"] is headrace.FrameStream
    assert typing.get_type_hints(headrace.Dataset.__getitem__, localns=names)["return"] is headrace.lazy.FieldArray
    for method in (headrace.Dataset.read, headrace.Dataset.array, headrace.Dataset.stream, headrace.Dataset.field,
                   headrace.Dataset.element_count, headrace.Dataset.__getitem__):
        assert method.__doc__ and len(method.__doc__) > 40, method.__name__


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["blocks", "hilbert", "volume"])
def test_gpu_streamed_grids_have_reads_natural_shape(layouts, name):
    import cupy

    ds = headrace.open(layouts[name])
    field = ds.fields[0].name
    with ds.stream(device=0) as stream:
        for frame in stream:
            expected = ds.read(frame.index, field)
            on_gpu = cupy.from_dlpack(frame[field])
            assert on_gpu.shape == expected.shape
            np.testing.assert_array_equal(cupy.asnumpy(on_gpu), expected)
            np.testing.assert_array_equal(cupy.asarray(frame[field]).get(), expected)  # the CUDA array interface
            np.testing.assert_array_equal(frame[field].numpy(), expected)
            frame.release(stream=cupy.cuda.get_current_stream().ptr)
    with ds.stream(device=0, stored_order=True) as stream:
        frame = next(stream)
        np.testing.assert_array_equal(cupy.asnumpy(cupy.from_dlpack(frame[field])),
                                      ds.read(frame.index, field, stored_order=True))


def test_netcdf_dates_come_back_as_dates_in_xarray(tmp_path):
    import pandas
    import xarray

    times = pandas.date_range("2020-01-01", periods=3, freq="6h")
    values = np.random.default_rng(5).random((3, 4, 5), dtype=np.float32)
    xarray.Dataset({"t2m": (("time", "y", "x"), values)}, coords={"time": times}).to_netcdf(tmp_path / "era.nc")
    assert main(["convert", str(tmp_path / "era.nc"), str(tmp_path / "era.hrc")]) == 0
    ds = headrace.open(tmp_path / "era.hrc")
    assert [f.time for f in ds.frames] == [0.0, 21600.0, 43200.0]  # seconds since the first date, as stored
    view = ds.to_xarray()
    np.testing.assert_array_equal(view.time.values, times.values)
    np.testing.assert_array_equal(view["t2m"].sel(time="2020-01-01T06:00").isel(z=0).values, values[1])  # (y, x): one z plane


def test_a_volume_of_another_type_is_refused_naming_each_fields_type(tmp_path):
    raw = tmp_path / "bonsai_16x16x16_uint8.raw"
    np.arange(16 ** 3, dtype=np.uint32).astype(np.uint8).tofile(raw)
    assert main(["convert", str(raw), str(tmp_path / "b.hrc")]) == 0
    from headrace.workloads.volume import VolumeRenderer

    with pytest.raises(errors.UsageError, match=r"no float32 field .*'bonsai' is uint8 x 1.*float32 scalars only"):
        VolumeRenderer(tmp_path / "b.hrc")
