"""Issue 35, converters: nothing read wrong without a word. Time series in one array become frames (or
an ambiguous shape is refused naming the choices), headerless raw grids convert by their dims and type
and are never read as particles, frame times come from wherever the format keeps them, HDF5 step groups
are found without a pattern, and the Writer keeps a grid's shape. Files are written by numpy, h5py,
netCDF4/xarray and zarr; every value is compared with numpy.array_equal after ``headrace convert`` and
``headrace.open(...).read``."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import headrace
from headrace import errors
from headrace.cli.main import main
from headrace.convert import convert
from headrace.convert.source import ConversionNote
from convert_support import assert_no_output, values


def one_line_error(capsys) -> str:
    """The command's stderr: one line naming the command, no traceback."""
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("headrace convert: ") and "Traceback" not in err, err
    return err


def frames_of(path: Path, field: str | None = None) -> list[np.ndarray]:
    ds = headrace.open(path)
    return [ds.read(frame.index, field) for frame in ds.frames]


def assert_frames(path: Path, expected, field: str | None = None) -> None:
    got = frames_of(path, field)
    assert len(got) == len(expected)
    for frame, (have, want) in enumerate(zip(got, expected)):
        assert have.shape == want.shape, (frame, have.shape, want.shape)
        assert np.array_equal(have, want), frame


# ---- 1. time series stored as one array -----------------------------------------------------------


def test_a_t_z_y_x_npy_is_frames_of_a_grid_and_exports_those_grids_to_vtk(tmp_path, capsys):
    vtk = pytest.importorskip("vtkmodules.vtkIOXML", reason="the export check reads .vti files with vtk")
    from vtkmodules.util.numpy_support import vtk_to_numpy

    series = values((100, 6, 7, 8))  # (t, z, y, x)
    np.save(tmp_path / "run.npy", series)
    output = tmp_path / "run.hrc"

    assert main(["convert", str(tmp_path / "run.npy"), str(output)]) == 0

    said = capsys.readouterr().err  # the rule's choice, and the option that reads it otherwise, once
    assert said.count("shape (100, 6, 7, 8) read as 100 frames of a 8 x 7 x 6 grid") == 1 and "--components 8" in said
    ds = headrace.open(output)
    assert len(ds.frames) == 100 and [(f.name, f.components) for f in ds.fields] == [("run", 1)]
    assert list(ds.attributes["grid_dims"]) == [8, 7, 6]
    assert_frames(output, list(series))
    assert main(["export", str(output), "--to", "vtk", str(tmp_path / "vtk")]) == 0
    files = sorted((tmp_path / "vtk").glob("*.vti"))
    assert len(files) == 100
    for index in (0, 57, 99):
        reader = vtk.vtkXMLImageDataReader()
        reader.SetFileName(str(tmp_path / "vtk" / f"run_{index:04d}.vti"))
        reader.Update()
        image = reader.GetOutput()
        assert image.GetDimensions() == (8, 7, 6)  # x, y, z points: what ParaView shows
        assert np.array_equal(vtk_to_numpy(image.GetPointData().GetArray("run")), series[index].reshape(-1))


def test_a_five_axis_npy_is_frames_of_a_grid_of_components(tmp_path):
    series = values((4, 3, 5, 6, 3), "float64")  # (t, z, y, x, c)
    np.save(tmp_path / "flow.npy", series)

    ds = headrace.open(convert(tmp_path / "flow.npy", tmp_path / "out.hrc"))

    assert [(f.name, f.components) for f in ds.fields] == [("flow", 3)] and list(ds.attributes["grid_dims"]) == [6, 5, 3]
    assert_frames(tmp_path / "out.hrc", list(series))


def test_an_hdf5_t_z_y_x_dataset_is_frames_with_its_scale_s_times(tmp_path):
    h5py = pytest.importorskip("h5py")
    series = values((5, 6, 7, 8))
    with h5py.File(tmp_path / "run.h5", "w") as file:
        file["rho"] = series
        file["time"] = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
        file["time"].make_scale("time")
        file["rho"].dims[0].attach_scale(file["time"])

    output = tmp_path / "out.hrc"
    assert main(["convert", str(tmp_path / "run.h5"), str(output)]) == 0

    assert_frames(output, list(series))
    assert [frame.time for frame in headrace.open(output).frames] == [0.0, 0.25, 0.5, 0.75, 1.0]


def test_an_hdf5_root_time_of_one_value_a_step_makes_axis_0_time(tmp_path):
    h5py = pytest.importorskip("h5py")
    series = values((3, 2, 3, 4))  # ambiguous by shape alone
    with h5py.File(tmp_path / "run.h5", "w") as file:
        file["rho"] = series
        file["time"] = np.array([0.0, 0.5, 1.5])

    output = convert(tmp_path / "run.h5", tmp_path / "out.hrc")

    assert_frames(output, list(series))
    assert [frame.time for frame in headrace.open(output).frames] == [0.0, 0.5, 1.5]


def test_an_hdf5_dimension_label_settles_a_shape_that_could_be_either(tmp_path):
    h5py = pytest.importorskip("h5py")
    series = values((4, 5, 6, 3))  # ambiguous by shape: labelled (t, z, y, x)
    grid = values((4, 5, 6, 3), seed=1)  # labelled (z, y, x, c)
    with h5py.File(tmp_path / "a.h5", "w") as file:
        file["series"] = series
        for axis, label in enumerate("tzyx"):
            file["series"].dims[axis].label = label
    with h5py.File(tmp_path / "b.h5", "w") as file:
        file["velocity"] = grid
        for axis, label in enumerate("zyxc"):
            file["velocity"].dims[axis].label = label

    assert_frames(convert(tmp_path / "a.h5", tmp_path / "a.hrc"), list(series))
    assert_frames(convert(tmp_path / "b.h5", tmp_path / "b.hrc"), [grid])


def test_zarr_dimension_names_say_where_time_is(tmp_path):
    zarr = pytest.importorskip("zarr")
    series = values((6, 7, 8, 4))  # time last, named
    group = zarr.open_group(tmp_path / "g.zarr", mode="w")
    group.create_array("rho", shape=series.shape, dtype="float32", dimension_names=("z", "y", "x", "time"))[...] = series
    volume = values((6, 7, 8), seed=2)
    zarr.create_array(tmp_path / "v.zarr", shape=volume.shape, dtype="float32",
                      dimension_names=("z", "y", "x"))[...] = volume  # no time: one frame, not 6 (y, x) frames

    assert_frames(convert(tmp_path / "g.zarr", tmp_path / "g.hrc"), [series[..., t] for t in range(4)], "rho")
    assert_frames(convert(tmp_path / "v.zarr", tmp_path / "v.hrc"), [volume])


@pytest.mark.parametrize("kind", ["npy", "hdf5", "zarr", "netcdf"])
def test_time_axis_works_for_every_array_format(tmp_path, kind):
    series = values((3, 4, 5, 6))  # (z, y, x, t) with time last
    expected = [series[..., t] for t in range(6)]
    if kind == "npy":
        source = tmp_path / "rho.npy"
        np.save(source, series)
    elif kind == "hdf5":
        h5py = pytest.importorskip("h5py")
        source = tmp_path / "rho.h5"
        with h5py.File(source, "w") as file:
            file["rho"] = series
    elif kind == "zarr":
        zarr = pytest.importorskip("zarr")
        source = tmp_path / "rho.zarr"
        zarr.create_array(source, shape=series.shape, dtype="float32")[...] = series
    else:
        xarray = pytest.importorskip("xarray")
        pytest.importorskip("netCDF4")
        source = tmp_path / "rho.nc"
        xarray.Dataset({"rho": (("z", "y", "x", "step"), series)}).to_netcdf(source)
    output = tmp_path / "out.hrc"

    assert main(["convert", str(source), str(output), "--time-axis", "3"]) == 0

    assert_frames(output, expected, "rho")
    assert list(headrace.open(output).attributes["grid_dims"]) == [5, 4, 3]


def test_a_shape_that_may_be_a_vector_grid_or_a_time_series_is_refused_naming_both(tmp_path, capsys):
    array = values((10, 6, 7, 3))
    np.save(tmp_path / "u.npy", array)
    output = tmp_path / "u.hrc"

    assert main(["convert", str(tmp_path / "u.npy"), str(output)]) == 2
    err = one_line_error(capsys)
    assert "u.npy" in err and "shape (10, 6, 7, 3)" in err and "--components 3" in err and "--time-axis 0" in err
    assert_no_output(output)

    assert main(["convert", str(tmp_path / "u.npy"), str(output), "--components", "3"]) == 0
    assert_frames(output, [array])
    assert main(["convert", str(tmp_path / "u.npy"), str(output), "--time-axis", "0", "--force"]) == 0
    assert_frames(output, list(array))


def test_a_sibling_grid_settles_the_shape_in_an_npz(tmp_path):
    pressure, velocity = values((4, 5, 6)), values((4, 5, 6, 3), seed=1)
    np.savez(tmp_path / "step0.npz", pressure=pressure, velocity=velocity)
    np.savez(tmp_path / "step1.npz", pressure=pressure + 1, velocity=velocity + 1)

    output = convert([tmp_path / "step0.npz", tmp_path / "step1.npz"], tmp_path / "out.hrc")

    assert_frames(output, [velocity, velocity + 1], "velocity")


# ---- 2. headerless raw grids --------------------------------------------------------------------------


def test_an_open_scivis_raw_volume_converts_by_its_name(tmp_path):
    volume = np.random.default_rng(0).integers(0, 256, (16, 16, 16), dtype=np.uint8)
    source = tmp_path / "bonsai_16x16x16_uint8.raw"
    volume.tofile(source)
    output = tmp_path / "bonsai.hrc"

    assert main(["convert", str(source), str(output)]) == 0

    ds = headrace.open(output)
    assert [(f.name, f.dtype, f.components) for f in ds.fields] == [("bonsai", "uint8", 1)]
    assert list(ds.attributes["grid_dims"]) == [16, 16, 16] and ds.attributes["source_format"] == "raw"
    assert_frames(output, [volume])


def test_a_raw_grid_takes_dims_and_dtype_and_holds_frames_back_to_back(tmp_path):
    frames = [values((3, 4, 5), "float32", seed=i).astype(">f4") for i in range(2)]
    source = tmp_path / "scan.dat"
    source.write_bytes(b"".join(frame.tobytes() for frame in frames))
    output = tmp_path / "scan.hrc"

    assert main(["convert", str(source), str(output), "--format", "raw", "--dims", "5", "4", "3", "--dtype", ">f4"]) == 0

    assert_frames(output, [frame.astype(np.float32) for frame in frames], "scan")


def test_a_raw_file_nothing_describes_is_refused_never_particles(tmp_path, capsys):
    source = tmp_path / "volume.raw"
    np.zeros(4096, np.uint8).tofile(source)  # 128 "particles" by size
    output = tmp_path / "out.hrc"

    assert main(["convert", str(source), str(output)]) == 2
    err = one_line_error(capsys)
    assert "volume.raw" in err and "4096 bytes" in err and "--dims X Y Z --dtype T" in err
    assert "--format raw-particles" in err
    assert_no_output(output)

    assert main(["convert", str(source), str(output), "--dims", "16", "16", "16", "--dtype", "uint8"]) == 0
    assert headrace.open(output).read(0).shape == (16, 16, 16)


def test_format_raw_without_dims_or_dtype_names_what_it_needs(tmp_path, capsys):
    source = tmp_path / "scan.bin"
    np.zeros(64, np.uint8).tofile(source)

    assert main(["convert", str(source), str(tmp_path / "out.hrc"), "--format", "raw", "--dtype", "uint8"]) == 2
    assert one_line_error(capsys).endswith("scan.bin: a raw grid needs --dims X Y Z, or a name NAME_XxYxZ_TYPE.raw "
                                           "that gives them")
    assert main(["convert", str(source), str(tmp_path / "out.hrc"), "--format", "raw"]) == 2
    assert "needs --dims X Y Z and --dtype T" in one_line_error(capsys)
    assert_no_output(tmp_path / "out.hrc")


def test_raw_particles_when_asked_or_named_so(tmp_path):
    particles = values((10, 8))
    named = tmp_path / "particles.raw"
    particles.tofile(named)

    assert_frames(convert(named, tmp_path / "a.hrc"), [particles])
    assert_frames(convert(named, tmp_path / "b.hrc", frames=2), [particles[:5], particles[5:]])


def test_a_raw_grid_whose_size_is_no_whole_frame_names_what_is_left_over(tmp_path, capsys):
    source = tmp_path / "skull_8x8x8_uint16.raw"
    np.zeros(8 * 8 * 8 + 3, np.uint16).tofile(source)

    assert main(["convert", str(source), str(tmp_path / "out.hrc")]) == 1
    err = one_line_error(capsys)
    assert "skull_8x8x8_uint16.raw: offset 1024: expected a whole number of frames of 1024 bytes" in err
    assert "1030 bytes (1 frames and 6 bytes)" in err
    assert_no_output(tmp_path / "out.hrc")


# ---- 3. frame times --------------------------------------------------------------------------------


def test_h5part_time_value_is_the_frame_time(tmp_path):
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "p.h5part", "w") as file:
        for step, time in enumerate((0.0, 0.5, 1.0)):
            group = file.create_group(f"Step#{step}")
            group.attrs["TimeValue"] = time
            for axis in "xyz":
                group[axis] = values(4, seed=step)

    ds = headrace.open(convert(tmp_path / "p.h5part", tmp_path / "out.hrc"))

    assert [frame.time for frame in ds.frames] == [0.0, 0.5, 1.0]


@pytest.mark.parametrize("where", ["attribute", "dataset"])
def test_a_file_per_step_series_takes_each_file_s_root_time(tmp_path, where):
    h5py = pytest.importorskip("h5py")
    frames = [values((3, 4, 5), seed=i) for i in range(3)]
    for step, frame in enumerate(frames):
        with h5py.File(tmp_path / f"out_{step}.h5", "w") as file:
            file["density"] = frame
            if where == "attribute":
                file.attrs["time"] = 0.1 * step
            else:
                file["time"] = 0.1 * step

    output = convert(sorted(tmp_path.glob("out_*.h5")), tmp_path / "out.hrc")

    assert_frames(output, frames)
    assert [frame.time for frame in headrace.open(output).frames] == [0.0, 0.1, 0.2]


def test_netcdf_dates_are_seconds_since_the_first(tmp_path):
    xarray = pytest.importorskip("xarray")
    pytest.importorskip("netCDF4")
    pandas = pytest.importorskip("pandas")
    temperature = values((4, 3, 5))
    times = pandas.date_range("2000-01-01", periods=4, freq="6h")
    xarray.Dataset({"t2m": (("time", "lat", "lon"), temperature)}, coords={"time": times}).to_netcdf(tmp_path / "era.nc")

    ds = headrace.open(convert(tmp_path / "era.nc", tmp_path / "out.hrc"))

    assert [frame.time for frame in ds.frames] == [0.0, 21600.0, 43200.0, 64800.0]
    assert ds.attributes["time_units"] == "seconds since 2000-01-01T00:00:00"
    assert ds.attributes["netcdf_time_units"].startswith("hours since 2000-01-01")
    assert_frames(tmp_path / "out.hrc", [frame[np.newaxis] for frame in temperature])


def test_zarr_time_coordinates_are_seconds_since_the_first(tmp_path):
    xarray = pytest.importorskip("xarray")
    pytest.importorskip("zarr")
    pandas = pytest.importorskip("pandas")
    density = values((3, 2, 3, 4))
    times = pandas.date_range("2024-03-01T12:00", periods=3, freq="1D")
    dataset = xarray.Dataset({"rho": (("time", "z", "y", "x"), density)}, coords={"time": times})
    dataset.to_zarr(tmp_path / "run.zarr", mode="w")

    ds = headrace.open(convert(tmp_path / "run.zarr", tmp_path / "out.hrc", variables=["rho"]))

    assert [frame.time for frame in ds.frames] == [0.0, 86400.0, 172800.0]
    assert ds.attributes["time_units"] == "seconds since 2024-03-01T12:00:00"
    assert_frames(tmp_path / "out.hrc", list(density))


# ---- 4. HDF5 step groups without a pattern --------------------------------------------------------


def test_hdf5_step_groups_are_found_and_said_once(tmp_path, capsys):
    h5py = pytest.importorskip("h5py")
    frames = [values((3, 4, 5), seed=i) for i in range(12)]
    with h5py.File(tmp_path / "run.h5", "w") as file:
        for step, frame in enumerate(frames):
            file[f"step{step}/density"] = frame
    output = tmp_path / "out.hrc"

    assert main(["convert", str(tmp_path / "run.h5"), str(output)]) == 0

    err = capsys.readouterr().err
    assert err.count("/step*/density") == 1 and "12 datasets" in err
    assert_frames(output, frames, "density")  # step2 before step10
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        convert(tmp_path / "run.h5", tmp_path / "api.hrc")
    assert [type(note.message) for note in said] == [ConversionNote]


def test_several_step_patterns_are_an_error_naming_them(tmp_path, capsys):
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "run.h5", "w") as file:
        for step in range(3):
            file[f"step{step}/density"] = values((2, 2, 2))
            file[f"step{step}/velocity"] = values((2, 2, 2, 3))
    output = tmp_path / "out.hrc"

    assert main(["convert", str(tmp_path / "run.h5"), str(output)]) == 2
    err = one_line_error(capsys)
    assert "--dataset '/step*/density' --dataset '/step*/velocity'" in err
    assert_no_output(output)


# ---- 5. Writer keeps a grid's shape ---------------------------------------------------------------


def test_the_writer_records_the_grid_of_3d_and_4d_arrays(tmp_path):
    scalar, vector = values((4, 5, 6)), values((4, 5, 6, 3), seed=1)
    path = tmp_path / "w.hrc"
    with headrace.Writer(path, [headrace.FieldSpec("rho", "float32"), headrace.FieldSpec("u", "float32", 3)]) as writer:
        for step in range(2):
            frame = writer.add_frame(time=float(step))
            writer.write(frame, "rho", scalar[:2] + step)  # z slabs add up to one grid
            writer.write(frame, "rho", scalar[2:] + step)
            writer.write(frame, "u", vector + step)

    ds = headrace.open(path)
    assert list(ds.attributes["grid_dims"]) == [6, 5, 4] and ds.attributes["layout"] == "linear"
    assert_frames(path, [scalar, scalar + 1], "rho")
    assert_frames(path, [vector, vector + 1], "u")


def test_a_grid_that_disagrees_with_grid_dims_is_an_error_and_leaves_no_file(tmp_path):
    path = tmp_path / "w.hrc"
    with pytest.raises(errors.UsageError, match=r"field 'rho' of frame 0 written as a 6 x 5 x 4 grid .*grid_dims is "
                                                 r"\[4, 5, 6\]"):
        with headrace.Writer(path, [headrace.FieldSpec("rho", "float32")]) as writer:
            writer.set_attribute("grid_dims", [4, 5, 6])
            writer.write(writer.add_frame(time=0.0), "rho", values((4, 5, 6)))
    assert_no_output(path)


def test_fields_written_as_different_grids_are_an_error(tmp_path):
    path = tmp_path / "w.hrc"
    specs = [headrace.FieldSpec("rho", "float32"), headrace.FieldSpec("u", "float32", 3)]
    with pytest.raises(errors.UsageError, match=r"field 'u' of frame 1 written as a 6 x 5 x 3 grid, another as "
                                                 r"6 x 5 x 4: a container holds one grid"):
        with headrace.Writer(path, specs) as writer:
            for step, depth in enumerate((4, 3)):
                frame = writer.add_frame(time=float(step))
                writer.write(frame, "rho", values((4, 5, 6)))
                writer.write(frame, "u", values((depth, 5, 6, 3)))
    assert_no_output(path)
