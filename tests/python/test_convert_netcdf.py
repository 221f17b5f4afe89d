"""NetCDF conversion through xarray (files written by xarray with the netCDF4 library, NetCDF-4 and
classic): variables over time as fields, the grid from the dimensions and coordinates, frame times,
several files, pieces, and bad input (cut files, variables to pick, types a container cannot hold)."""

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
from convert_support import assert_no_output

xr = pytest.importorskip("xarray", reason="the NetCDF reader needs xarray and netCDF4 (scripts/setup.sh installs it)")
pytest.importorskip("netCDF4", reason="the NetCDF reader needs xarray and netCDF4 (scripts/setup.sh installs them)")

FORMATS = ["NETCDF4", "NETCDF4_CLASSIC", "NETCDF3_CLASSIC", "NETCDF3_64BIT"]


def read(ds: headrace.Dataset, frame: int, field: str) -> np.ndarray:
    return ds.read(frame, field).reshape(-1)


def one_line_error(capsys) -> str:
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1, error
    return error


def weather(steps: int = 4, seed: int = 0) -> xr.Dataset:
    """Two variables over (time, lat, lon) with uniform coordinates and a time in hours."""
    rng = np.random.default_rng(seed)
    return xr.Dataset(
        {"temperature": (("time", "lat", "lon"), rng.normal(280, 5, (steps, 5, 6)).astype(np.float32)),
         "pressure": (("time", "lat", "lon"), rng.normal(1e5, 100, (steps, 5, 6)))},
        coords={"time": ("time", 6.0 * np.arange(steps) + 3, {"units": "hours since 2000-01-01"}),
                "lat": np.linspace(-10.0, 10.0, 5), "lon": np.linspace(0.0, 50.0, 6)})


def convert_both_ways(tmp_path: Path, source: Path | str, *options: str, **keywords) -> list[headrace.Dataset]:
    """The same input converted by the Python API and by the CLI, both opened."""
    api = convert(source, tmp_path / "api.hrc", **keywords)
    assert main(["convert", str(source), str(tmp_path / "cli.hrc"), *options]) == 0
    return [headrace.open(api), headrace.open(tmp_path / "cli.hrc")]


@pytest.mark.parametrize("file_format", FORMATS)
def test_variables_over_time_are_fields_on_the_coordinates_grid(tmp_path, file_format):
    data = weather()
    data.to_netcdf(tmp_path / "w.nc", format=file_format)

    for ds in convert_both_ways(tmp_path, tmp_path / "w.nc"):
        assert [(f.name, f.dtype, f.components) for f in ds.fields] == [("temperature", "float32", 1),
                                                                        ("pressure", "float64", 1)]
        assert len(ds.frames) == 4
        for step in range(4):
            np.testing.assert_array_equal(read(ds, step, "temperature"), data["temperature"].values[step].reshape(-1))
            np.testing.assert_array_equal(read(ds, step, "pressure"), data["pressure"].values[step].reshape(-1))
        assert [frame.time for frame in ds.frames] == [0.0, 21600.0, 43200.0, 64800.0]  # dates: seconds since the first
        assert ds.attributes["time_units"] == "seconds since 2000-01-01T03:00:00"
        assert ds.attributes["netcdf_time_units"] == "hours since 2000-01-01"
        assert ds.attributes["netcdf_time_dim"] == "time"
        assert ds.attributes["netcdf_dims"] == "lon,lat"
        assert list(ds.attributes["grid_dims"]) == [6, 5, 1]
        assert list(ds.attributes["grid_origin"]) == [0.0, -10.0, 0.0]
        assert list(ds.attributes["grid_spacing"]) == [10.0, 5.0, 1.0]
        assert ds.attributes["layout"] == "linear"
        assert "netcdf_index_axes" not in ds.attributes
        assert ds.frames[0].bbox == ((0.0, -10.0, 0.0), (50.0, 10.0, 0.0))


def test_three_dimensional_grids_put_the_last_dimension_fastest(tmp_path):
    rng = np.random.default_rng(1)
    wind = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)
    xr.Dataset({"w": (("t", "z", "y", "x"), wind)},
               coords={"z": [0.0, 0.5, 1.0], "y": [10.0, 12.0, 14.0, 16.0], "x": np.arange(5) * 0.1}).to_netcdf(
        tmp_path / "w.nc", unlimited_dims=["t"])

    ds = headrace.open(convert(tmp_path / "w.nc", tmp_path / "out.hrc"))  # t: the unlimited dimension

    assert list(ds.attributes["grid_dims"]) == [5, 4, 3]
    assert list(ds.attributes["grid_origin"]) == [0.0, 10.0, 0.0]
    assert list(ds.attributes["grid_spacing"]) == pytest.approx([0.1, 2.0, 0.5])
    assert ds.attributes["netcdf_dims"] == "x,y,z"
    for step in range(2):
        np.testing.assert_array_equal(read(ds, step, "w"), wind[step].reshape(-1))
    assert [frame.time for frame in ds.frames] == [0.0, 1.0]  # no time coordinate: the frame index


def test_axes_without_uniform_increasing_coordinates_count_points(tmp_path):
    data = weather()
    data = data.assign_coords(lat=[-10.0, -4.0, 0.0, 5.0, 10.0], lon=np.linspace(50.0, 0.0, 6))
    data.to_netcdf(tmp_path / "w.nc")

    ds = headrace.open(convert(tmp_path / "w.nc", tmp_path / "out.hrc", variables=["temperature"]))

    assert list(ds.attributes["grid_origin"]) == [0.0, 0.0, 0.0]
    assert list(ds.attributes["grid_spacing"]) == [1.0, 1.0, 1.0]
    assert ds.attributes["netcdf_index_axes"] == "lon,lat"
    assert [f.name for f in ds.fields] == ["temperature"]


def test_packed_and_filled_values_are_converted_as_xarray_decodes_them(tmp_path):
    data = weather()
    data["temperature"].encoding.update(dtype="int16", scale_factor=0.01, add_offset=280.0, _FillValue=-32767)
    data["temperature"][1, 2, 3] = np.nan
    data.to_netcdf(tmp_path / "w.nc")
    decoded = xr.open_dataset(tmp_path / "w.nc")["temperature"].values

    ds = headrace.open(convert(tmp_path / "w.nc", tmp_path / "out.hrc"))

    assert ds.fields[0].dtype == decoded.dtype.name
    for step in range(4):
        np.testing.assert_array_equal(read(ds, step, "temperature"), decoded[step].reshape(-1))
    assert np.isnan(ds.read(1, "temperature").reshape(5, 6)[2, 3])


def test_time_may_be_any_dimension_and_named_by_option(tmp_path):
    rng = np.random.default_rng(2)
    level = rng.integers(0, 1000, (3, 4, 7)).astype(np.int32)  # (y, x, step): time last
    xr.Dataset({"level": (("y", "x", "step"), level)}).to_netcdf(tmp_path / "l.nc")

    for ds in convert_both_ways(tmp_path, tmp_path / "l.nc", "--time-dim", "step", time_dim="step"):
        assert len(ds.frames) == 7
        for step in range(7):
            np.testing.assert_array_equal(read(ds, step, "level"), level[:, :, step].reshape(-1))
        assert list(ds.attributes["grid_dims"]) == [4, 3, 1]


def test_a_file_without_time_is_one_frame(tmp_path):
    depth = np.random.default_rng(3).uniform(size=(4, 6))
    xr.Dataset({"depth": (("y", "x"), depth)}).to_netcdf(tmp_path / "d.nc")

    ds = headrace.open(convert(tmp_path / "d.nc", tmp_path / "out.hrc"))

    assert len(ds.frames) == 1
    np.testing.assert_array_equal(read(ds, 0, "depth"), depth.reshape(-1))
    assert "netcdf_time_dim" not in ds.attributes


def test_several_files_follow_each_other_along_time(tmp_path):
    parts = [weather(steps=2, seed=seed) for seed in range(3)]
    for index, part in enumerate(parts):
        part.assign_coords(time=part["time"] + 12 * index).to_netcdf(tmp_path / f"w_{index}.nc")

    for ds in convert_both_ways(tmp_path, tmp_path / "w_*.nc"):
        assert len(ds.frames) == 6
        assert [frame.time for frame in ds.frames] == [3600.0 * (t - 3) for t in (3, 9, 15, 21, 27, 33)]
        for index, part in enumerate(parts):
            for step in range(2):
                np.testing.assert_array_equal(read(ds, 2 * index + step, "pressure"),
                                              part["pressure"].values[step].reshape(-1))


def test_chunked_frames_larger_than_a_slice_are_written_in_pieces(tmp_path, monkeypatch):
    monkeypatch.setattr(_arrays, "SLICE_BYTES", 64)  # less than two rows of 6 float64 (96 bytes)
    data = weather(steps=2)
    data.to_netcdf(tmp_path / "w.nc", encoding={"pressure": {"chunksizes": (1, 2, 3), "zlib": True}})

    source = open_source(tmp_path / "w.nc", variables=["pressure"])
    pieces = [piece.array.shape for frame in source.frames() for piece in frame.pieces]
    assert pieces == [(6, 1)] * 10  # a row of 6 points (48 bytes) at a time

    ds = headrace.open(convert(tmp_path / "w.nc", tmp_path / "out.hrc", variables=["pressure"]))
    for step in range(2):
        np.testing.assert_array_equal(read(ds, step, "pressure"), data["pressure"].values[step].reshape(-1))


def test_netcdf_is_known_by_its_first_bytes(tmp_path):
    weather().to_netcdf(tmp_path / "classic", format="NETCDF3_CLASSIC")

    assert guess_format([tmp_path / "classic"]) is InputFormat.NETCDF
    ds = headrace.open(convert(tmp_path / "classic", tmp_path / "out.hrc"))
    assert len(ds.frames) == 4


def test_json_summary_names_the_format(tmp_path, capsys):
    weather().to_netcdf(tmp_path / "w.nc")

    assert main(["convert", str(tmp_path / "w.nc"), str(tmp_path / "out.hrc"), "--variables", "pressure", "--json"]) == 0

    summary = json.loads(capsys.readouterr().out)
    assert summary["format"] == "netcdf"
    assert [(f["name"], f["elements"]) for f in summary["fields"]] == [("pressure", 120)]


# ---- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize("file_format", ["NETCDF4", "NETCDF3_CLASSIC"])
def test_truncated_file(tmp_path, capsys, file_format):
    weather(steps=20).to_netcdf(tmp_path / "w.nc", format=file_format)
    data = (tmp_path / "w.nc").read_bytes()
    (tmp_path / "w.nc").write_bytes(data[: len(data) // 2])

    with pytest.raises(errors.TruncatedFileError, match=rf"w\.nc: offset {len(data) // 2}: expected"):
        convert(tmp_path / "w.nc", tmp_path / "out.hrc")
    assert main(["convert", str(tmp_path / "w.nc"), str(tmp_path / "out.hrc")]) == 1

    error = one_line_error(capsys)
    assert error.startswith(f"headrace convert: {tmp_path / 'w.nc'}: offset {len(data) // 2}: expected")
    assert error.endswith(f"found {len(data) // 2} bytes")
    assert_no_output(tmp_path / "out.hrc")


def test_not_netcdf(tmp_path):
    (tmp_path / "w.nc").write_bytes(b"surely not NetCDF" * 8)

    with pytest.raises(errors.BadMagicError, match=r"w\.nc: offset 0: expected a NetCDF file"):
        convert(tmp_path / "w.nc", tmp_path / "out.hrc")
    assert_no_output(tmp_path / "out.hrc")


def test_variables_on_different_grids_must_be_picked(tmp_path, capsys):
    data = weather()
    data["wind"] = (("time", "level", "lat", "lon"), np.zeros((4, 2, 5, 6), np.float32))
    data.to_netcdf(tmp_path / "w.nc")

    assert main(["convert", str(tmp_path / "w.nc"), str(tmp_path / "out.hrc")]) == 2
    error = one_line_error(capsys)
    assert "temperature, pressure (lat=5, lon=6); wind (level=2, lat=5, lon=6)" in error
    assert "pick those of one grid with --variables" in error
    assert_no_output(tmp_path / "out.hrc")

    ds = headrace.open(convert(tmp_path / "w.nc", tmp_path / "out.hrc", variables=["wind"]))
    assert list(ds.attributes["grid_dims"]) == [6, 5, 2]


def test_a_variable_that_is_not_there(tmp_path, capsys):
    weather().to_netcdf(tmp_path / "w.nc")

    assert main(["convert", str(tmp_path / "w.nc"), str(tmp_path / "out.hrc"), "--variables", "humidity"]) == 1

    error = one_line_error(capsys)
    assert error.startswith(f"headrace convert: {tmp_path / 'w.nc'}: variable humidity: expected a variable of the file")
    assert "data variables: temperature, pressure" in error
    assert_no_output(tmp_path / "out.hrc")


def test_a_type_a_container_cannot_hold(tmp_path, capsys):
    data = weather()
    data["station"] = (("time", "lat"), np.full((4, 5), "abc"))
    data.to_netcdf(tmp_path / "w.nc")

    assert main(["convert", str(tmp_path / "w.nc"), str(tmp_path / "out.hrc"), "--variables", "station"]) == 1

    error = one_line_error(capsys)
    assert error.startswith(f"headrace convert: {tmp_path / 'w.nc'}: variable station: expected numbers a container "
                            "holds")
    assert_no_output(tmp_path / "out.hrc")


def test_a_grid_that_changes_between_files(tmp_path, capsys):
    weather().to_netcdf(tmp_path / "w_0.nc")
    weather().isel(lon=slice(0, 5)).to_netcdf(tmp_path / "w_1.nc")

    assert main(["convert", str(tmp_path / "w_*.nc"), str(tmp_path / "out.hrc")]) == 1

    error = one_line_error(capsys)
    assert error.startswith(f"headrace convert: {tmp_path / 'w_1.nc'}: variable temperature: expected dimensions "
                            f"(lat=5, lon=6) as in {tmp_path / 'w_0.nc'}, found (lat=5, lon=5)")
    assert_no_output(tmp_path / "out.hrc")


def test_options_of_other_formats_are_refused(tmp_path, capsys):
    weather().to_netcdf(tmp_path / "w.nc")

    assert main(["convert", str(tmp_path / "w.nc"), str(tmp_path / "out.hrc"), "--components", "3"]) == 2

    assert "--components does not apply to format netcdf" in one_line_error(capsys)
