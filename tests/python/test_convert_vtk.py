"""VTK conversion: .vti image data, .vtp point sets and .pvd series written by vtk itself, converted and
read back value for value; bad inputs (lines, missing files, changing shapes, odd arrays) refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("vtkmodules", reason="the VTK readers need the vtk package (scripts/setup.sh installs it)")

from vtkmodules.util.numpy_support import numpy_to_vtk  # noqa: E402
from vtkmodules.vtkCommonCore import vtkBitArray, vtkPoints, vtkStringArray  # noqa: E402
from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkImageData, vtkPolyData  # noqa: E402
from vtkmodules.vtkIOXML import vtkXMLImageDataWriter, vtkXMLPolyDataWriter  # noqa: E402

import headrace  # noqa: E402
from headrace import errors  # noqa: E402
from headrace.cli.main import main  # noqa: E402
from headrace.convert import convert  # noqa: E402
from convert_support import assert_no_output, values

DTYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32", "float64"]
# vtk's XML writer modes: ascii, inline base64, appended raw, appended base64 with zlib (vtk's defaults),
# appended raw with zlib.
MODES = ["ascii", "binary", "appended", "appended-base64-zlib", "appended-zlib"]


def vtk_array(name: str, values: np.ndarray):
    array = numpy_to_vtk(values, deep=True)
    array.SetName(name)
    return array


def write(writer, path: Path, data, mode: str = "appended") -> Path:
    writer.SetFileName(str(path))
    writer.SetInputData(data)
    if mode == "ascii":
        writer.SetDataModeToAscii()
    elif mode == "binary":
        writer.SetDataModeToBinary()
    else:
        writer.SetDataModeToAppended()
        if "base64" not in mode:
            writer.EncodeAppendedDataOff()
    if not mode.endswith("zlib"):
        writer.SetCompressorTypeToNone()
    assert writer.Write() == 1
    return path


def write_vti(path: Path, arrays: dict[str, np.ndarray], dims=(5, 4, 3), origin=(0.0, 0.0, 0.0),
              spacing=(1.0, 1.0, 1.0), start=(0, 0, 0), time_value: float | None = None, mode: str = "appended",
              cell_arrays: dict[str, np.ndarray] | None = None) -> Path:
    """An image of ``dims`` points whose extent starts at ``start``; arrays are (points[, c]), x fastest."""
    image = vtkImageData()
    image.SetExtent(*(value for axis in range(3) for value in (start[axis], start[axis] + dims[axis] - 1)))
    image.SetOrigin(*origin)
    image.SetSpacing(*spacing)
    for name, array in arrays.items():
        image.GetPointData().AddArray(vtk_array(name, array))
    for name, array in (cell_arrays or {}).items():
        image.GetCellData().AddArray(vtk_array(name, array))
    if time_value is not None:
        image.GetFieldData().AddArray(vtk_array("TimeValue", np.array([time_value])))
    return write(vtkXMLImageDataWriter(), path, image, mode)


def cells(kind: str, count: int) -> vtkCellArray:
    """``count`` one-point cells (vertices), one poly-vertex of them all, or one cell of the other kinds."""
    array = vtkCellArray()
    if kind == "vertices":
        array.SetData(1, numpy_to_vtk(np.arange(count, dtype=np.int64), deep=True))
    else:
        size = {"poly-vertex": count, "lines": 2, "polys": 3, "strips": 3}[kind]
        array.InsertNextCell(size)
        for point in range(size):
            array.InsertCellPoint(point)
    return array


def write_vtp(path: Path, points: np.ndarray, arrays: dict[str, np.ndarray] | None = None, cell_kind: str = "vertices",
              mode: str = "appended", extra=None) -> Path:
    poly = vtkPolyData()
    vtk_points = vtkPoints()
    vtk_points.SetData(numpy_to_vtk(points, deep=True))
    poly.SetPoints(vtk_points)
    if cell_kind != "none":
        setter = {"vertices": poly.SetVerts, "poly-vertex": poly.SetVerts, "lines": poly.SetLines,
                  "polys": poly.SetPolys, "strips": poly.SetStrips}[cell_kind]
        setter(cells(cell_kind, len(points)))
    for name, array in (arrays or {}).items():
        poly.GetPointData().AddArray(vtk_array(name, array))
    if extra is not None:
        poly.GetPointData().AddArray(extra)
    return write(vtkXMLPolyDataWriter(), path, poly, mode)


def write_pvd(path: Path, entries: list[tuple[float, str]]) -> Path:
    """A ParaView collection as ParaView writes it, by hand."""
    lines = [f'    <DataSet timestep="{time!r}" group="" part="0" file="{name}"/>' for time, name in entries]
    path.write_text('<?xml version="1.0"?>\n<VTKFile type="Collection" version="0.1" byte_order="LittleEndian">\n'
                    "  <Collection>\n" + "\n".join(lines) + "\n  </Collection>\n</VTKFile>\n")
    return path


def grid_shape(dims, components: int) -> tuple[int, ...]:
    """``ds.read``'s natural shape of a grid field: (Z, Y, X) or (Z, Y, X, C)."""
    x, y, z = dims
    return (z, y, x) if components == 1 else (z, y, x, components)


def run_cli(capfd, *words) -> tuple[int, str]:
    """Exit status and stderr, vtk's own (file descriptor 2) included: vtk must print nothing itself."""
    code = main(["convert", *map(str, words)])
    return code, capfd.readouterr().err.strip()


# --- .vti --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_vti_point_arrays_become_grid_fields_of_every_dtype(tmp_path, dtype):
    dims = (5, 4, 3)
    points = 5 * 4 * 3
    arrays = {"density": values(points, dtype, 1), "velocity": values((points, 3), dtype, 2)}
    source = write_vti(tmp_path / "a.vti", arrays, dims=dims, origin=(1.0, -2.0, 0.5), spacing=(0.5, 0.25, 2.0),
                       start=(2, 0, 1))

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    assert [(f.name, f.dtype, f.components) for f in ds.fields] == [("density", dtype, 1), ("velocity", dtype, 3)]
    for name, array in arrays.items():
        components = 1 if array.ndim == 1 else array.shape[1]
        np.testing.assert_array_equal(ds.read(0, name), array.reshape(grid_shape(dims, components)))
    assert list(ds.attributes["grid_dims"]) == [5, 4, 3]
    # the extent starts at (2, 0, 1): its first point sits at origin + start * spacing
    assert list(ds.attributes["grid_origin"]) == [2.0, -2.0, 2.5]
    assert list(ds.attributes["grid_spacing"]) == [0.5, 0.25, 2.0]
    assert ds.attributes["layout"] == "linear"
    assert ds.attributes["source_format"] == "vti"
    assert ds.frames[0].bbox == ((2.0, -2.0, 2.5), (4.0, -1.25, 6.5))
    assert ds.frames[0].time == 0.0


@pytest.mark.parametrize("mode", MODES)
def test_vti_in_every_writer_mode_reads_the_same(tmp_path, mode):
    array = values((60, 2), "float64")
    source = write_vti(tmp_path / "a.vti", {"uv": array}, mode=mode)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    np.testing.assert_array_equal(ds.read(0, "uv"), array.reshape(3, 4, 5, 2))


def test_several_vti_are_frames_in_order_with_their_time_values(tmp_path):
    frames = [values(60, "float32", seed) for seed in range(3)]
    for index, array in enumerate(frames):
        write_vti(tmp_path / f"rho_{index}.vti", {"rho": array}, time_value=0.25 * index + 1.0)

    ds = headrace.open(convert(str(tmp_path / "rho_*.vti"), tmp_path / "out.hrc"))

    assert [frame.time for frame in ds.frames] == [1.0, 1.25, 1.5]
    for index, array in enumerate(frames):
        np.testing.assert_array_equal(ds.read(index, "rho"), array.reshape(3, 4, 5))


def test_vti_without_time_values_take_the_frame_index(tmp_path):
    paths = [write_vti(tmp_path / f"t{i}.vti", {"rho": values(60, seed=i)}) for i in (2, 10, 1)]

    ds = headrace.open(convert(paths, tmp_path / "out.hrc"))

    assert [frame.time for frame in ds.frames] == [0.0, 1.0, 2.0]  # the order given
    np.testing.assert_array_equal(ds.read(1, "rho").reshape(-1), values(60, seed=10))


# --- .vtp --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("point_dtype", ["float32", "float64"])
@pytest.mark.parametrize("cell_kind", ["vertices", "poly-vertex", "none"])
def test_vtp_points_become_positions_and_point_arrays_particle_fields(tmp_path, point_dtype, cell_kind):
    points = values((40, 3), point_dtype)
    arrays = {"mass": values(40, "float32", 1), "id": np.arange(40, dtype=np.int64),
              "colour": values((40, 4), "uint8", 2)}
    source = write_vtp(tmp_path / "p.vtp", points, arrays, cell_kind=cell_kind)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    assert [(f.name, f.dtype, f.components) for f in ds.fields] == [
        ("position", point_dtype, 3), ("mass", "float32", 1), ("id", "int64", 1), ("colour", "uint8", 4)]
    np.testing.assert_array_equal(ds.read(0, "position"), points)
    for name, array in arrays.items():
        np.testing.assert_array_equal(ds.read(0, name), array.reshape(40, -1))
    assert "grid_dims" not in ds.attributes
    assert ds.attributes["source_format"] == "vtp"
    low, high = ds.frames[0].bbox
    np.testing.assert_array_equal(low, points.min(axis=0).astype(np.float64))
    np.testing.assert_array_equal(high, points.max(axis=0).astype(np.float64))


@pytest.mark.parametrize("mode", MODES)
def test_vtp_in_every_writer_mode_reads_the_same(tmp_path, mode):
    points = values((25, 3), "float64")
    source = write_vtp(tmp_path / "p.vtp", points, {"t": values(25, "int32")}, mode=mode)

    ds = headrace.open(convert(source, tmp_path / "out.hrc"))

    np.testing.assert_array_equal(ds.read(0, "position"), points)
    np.testing.assert_array_equal(ds.read(0, "t").reshape(-1), values(25, "int32"))


def test_vtp_frames_may_change_their_number_of_points(tmp_path):
    sets = [values((count, 3), "float32", count) for count in (10, 30, 20)]
    paths = [write_vtp(tmp_path / f"p{i}.vtp", points, {"r": points[:, 0].copy()}) for i, points in enumerate(sets)]

    ds = headrace.open(convert(paths, tmp_path / "out.hrc"))

    for index, points in enumerate(sets):
        np.testing.assert_array_equal(ds.read(index, "position"), points)
        np.testing.assert_array_equal(ds.read(index, "r").reshape(-1), points[:, 0])


# --- .pvd --------------------------------------------------------------------------------------------


def test_pvd_frames_follow_the_timesteps_and_take_their_times(tmp_path):
    (tmp_path / "data").mkdir()
    frames = {t: values(60, "float64", int(t * 10)) for t in (0.5, 0.1, 2.0)}
    for t, array in frames.items():
        write_vti(tmp_path / "data" / f"step_{t}.vti", {"rho": array}, time_value=99.0)  # the .pvd's time wins
    series = write_pvd(tmp_path / "run.pvd", [(t, f"data/step_{t}.vti") for t in frames])  # listed out of order

    ds = headrace.open(convert(series, tmp_path / "out.hrc"))

    assert [frame.time for frame in ds.frames] == [0.1, 0.5, 2.0]
    for index, t in enumerate(sorted(frames)):
        np.testing.assert_array_equal(ds.read(index, "rho").reshape(-1), frames[t])
    assert ds.attributes["source_format"] == "pvd"
    assert ds.attributes["source_path"] == str(series)


def test_pvd_of_point_sets(tmp_path):
    sets = [values((n, 3), "float32", n) for n in (5, 7)]
    for index, points in enumerate(sets):
        write_vtp(tmp_path / f"p_{index}.vtp", points)
    series = write_pvd(tmp_path / "p.pvd", [(10.0 * index, f"p_{index}.vtp") for index in range(2)])

    ds = headrace.open(convert(series, tmp_path / "out.hrc"))

    assert [frame.time for frame in ds.frames] == [0.0, 10.0]
    for index, points in enumerate(sets):
        np.testing.assert_array_equal(ds.read(index, "position"), points)


def test_cli_guesses_the_vtk_formats_from_the_extension(tmp_path, capfd):
    write_vti(tmp_path / "a.vti", {"rho": values(60)})

    code, _ = run_cli(capfd, tmp_path / "a.vti", tmp_path / "out.hrc", "--json")

    assert code == 0
    assert headrace.open(tmp_path / "out.hrc").attributes["source_format"] == "vti"


# --- bad input: exit 1, one line naming the file, nothing left behind ---------------------------------


@pytest.mark.parametrize("cell_kind, named", [("lines", "line cells"), ("polys", "polygon cells"),
                                               ("strips", "triangle strip cells")])
def test_polydata_with_other_cells_is_refused_naming_the_cell_kind(tmp_path, capfd, cell_kind, named):
    source = write_vtp(tmp_path / "mesh.vtp", values((6, 3)), cell_kind=cell_kind)
    output = tmp_path / "out.hrc"

    code, error = run_cli(capfd, source, output)

    assert code == 1 and len(error.splitlines()) == 1
    assert error.startswith(f"headrace convert: {source}: cells: expected points with vertex")
    assert f"found 1 {named}" in error
    assert_no_output(output)


def test_pvd_naming_a_missing_file_is_one_line_naming_both(tmp_path, capfd):
    write_vti(tmp_path / "s0.vti", {"rho": values(60)})
    series = write_pvd(tmp_path / "run.pvd", [(0.0, "s0.vti"), (1.0, "s1.vti")])
    output = tmp_path / "out.hrc"

    code, error = run_cli(capfd, series, output)

    assert code == 1 and len(error.splitlines()) == 1
    assert str(series) in error and str(tmp_path / "s1.vti") in error and "does not exist" in error
    assert_no_output(output)
    with pytest.raises(errors.MissingFileError):
        convert(series, output)


@pytest.mark.parametrize("second, named", [
    (dict(dims=(5, 4, 4)), "grid dims: expected 5 x 4 x 3 as in"),
    (dict(spacing=(1.0, 2.0, 1.0)), "grid spacing: expected 1 x 1 x 1 as in"),
    (dict(arrays={"rho": values(60, "float64")}), "point array 'rho': expected float32 x 1 as in"),
    (dict(arrays={"rho": values((60, 2), "float32")}), "point array 'rho': expected float32 x 1 as in"),
    (dict(arrays={"rho": values(60), "extra": values(60)}), "point array 'extra': expected only the arrays of"),
    (dict(arrays={"other": values(60)}), "point array 'rho': expected float32 x 1 as in"),
])
def test_frames_that_change_shape_or_arrays_are_refused(tmp_path, capfd, second, named):
    first = write_vti(tmp_path / "a0.vti", {"rho": values(60)})
    options = {"arrays": {"rho": values(80 if "dims" in second else 60)}, **second}
    other = write_vti(tmp_path / "a1.vti", options.pop("arrays"), **options)
    output = tmp_path / "out.hrc"

    code, error = run_cli(capfd, first, other, output)

    assert code == 1 and len(error.splitlines()) == 1
    assert error.startswith(f"headrace convert: {other}: {named} {first}"), error
    assert_no_output(output)


def test_point_sets_whose_point_type_changes_are_refused(tmp_path, capfd):
    first = write_vtp(tmp_path / "p0.vtp", values((4, 3), "float32"))
    other = write_vtp(tmp_path / "p1.vtp", values((4, 3), "float64"))

    code, error = run_cli(capfd, first, other, tmp_path / "out.hrc")

    assert code == 1 and error == (f"headrace convert: {other}: Points: expected float32 as in {first}, "
                                   "found float64")


def string_array(count: int):
    array = vtkStringArray()
    array.SetName("label")
    for index in range(count):
        array.InsertNextValue(f"p{index}")
    return array


def bit_array(count: int):
    array = vtkBitArray()
    array.SetName("flag")
    array.SetNumberOfTuples(count)
    return array


@pytest.mark.parametrize("make, name, kind", [(string_array, "label", "string"), (bit_array, "flag", "bit")])
def test_arrays_of_unsupported_types_are_refused_naming_the_array(tmp_path, capfd, make, name, kind):
    source = write_vtp(tmp_path / "p.vtp", values((5, 3)), extra=make(5))
    output = tmp_path / "out.hrc"

    code, error = run_cli(capfd, source, output)

    assert code == 1 and len(error.splitlines()) == 1
    assert error == (f"headrace convert: {source}: point array '{name}': expected numbers (Int8 .. Int64, UInt8 .. "
                     f"UInt64, Float32, Float64), found an array of {kind}")
    assert_no_output(output)


def test_cell_data_is_refused(tmp_path, capfd):
    source = write_vti(tmp_path / "a.vti", {"rho": values(60)}, cell_arrays={"pressure": values(24)})

    code, error = run_cli(capfd, source, tmp_path / "out.hrc")

    assert code == 1 and error.startswith(f"headrace convert: {source}: cell array 'pressure': expected point data")


def test_an_array_named_position_in_a_point_set_is_refused(tmp_path, capfd):
    source = write_vtp(tmp_path / "p.vtp", values((5, 3)), {"position": values(5)})

    code, error = run_cli(capfd, source, tmp_path / "out.hrc")

    assert code == 1 and "point array 'position': expected another name" in error


def test_a_compressed_file_cut_short_is_refused_though_vtk_says_nothing(tmp_path, capfd):
    """vtk leaves out an array whose compressed data ends early and reports no error; the header says it is there."""
    source = write_vti(tmp_path / "a.vti", {"rho": values(20 * 20 * 20)}, dims=(20, 20, 20), mode="appended-zlib")
    source.write_bytes(source.read_bytes()[: source.stat().st_size * 3 // 4])
    output = tmp_path / "out.hrc"

    code, error = run_cli(capfd, source, output)

    assert code == 1 and len(error.splitlines()) == 1
    assert error.startswith(f"headrace convert: {source}: point array 'rho': expected 8000 points of float32 x 1 "
                            "(the file's header), found no such array")
    assert_no_output(output)


@pytest.mark.parametrize("name, content, start", [
    ("bad.vti", b"not xml at all", "start: expected a VTK XML ImageData file"),
    ("bad.vti", b'<VTKFile type="PolyData" version="0.1"><PolyData></PolyData></VTKFile>',
     "start: expected a VTK XML ImageData"),
    ("bad.vti", b'<VTKFile type="ImageData" version="0.1"><ImageData WholeExtent="0 1',
     "header: expected a readable VTK XML ImageData header, found XML that vtk's parser cannot read"),
    ("bad.vtp", b'<VTKFile type="PolyData" version="0.1"><PolyData><Piece NumberOfPoints="3',
     "header: expected a readable VTK XML PolyData header"),
])
def test_files_vtk_cannot_read_are_refused_in_one_line(tmp_path, capfd, name, content, start):
    source = tmp_path / name
    source.write_bytes(content)
    output = tmp_path / "out.hrc"

    code, error = run_cli(capfd, source, output)

    assert code == 1 and len(error.splitlines()) == 1, error
    assert error.startswith(f"headrace convert: {source}: {start}"), error
    assert_no_output(output)


@pytest.mark.parametrize("text, expected", [
    ("<VTKFile type='Collection'><Collection>", "line 1, column 39: expected a ParaView collection (XML)"),
    ("<VTKFile type='UnstructuredGrid'/>", "root element: expected <VTKFile type=\"Collection\">"),
    ("<VTKFile type='Collection'><Collection/></VTKFile>", "Collection: expected at least one DataSet, found none"),
    ("<VTKFile type='Collection'><Collection><DataSet timestep='soon' file='a.vti'/></Collection></VTKFile>",
     "DataSet 0: expected a timestep that is a number, found 'soon'"),
])
def test_bad_pvd_files_are_refused_in_one_line(tmp_path, capfd, text, expected):
    write_vti(tmp_path / "a.vti", {"rho": values(60)})
    series = tmp_path / "bad.pvd"
    series.write_text(text)

    code, error = run_cli(capfd, series, tmp_path / "out.hrc")

    assert code == 1 and error.startswith(f"headrace convert: {series}: {expected}"), error


def test_a_pvd_with_two_datasets_at_one_timestep_is_refused(tmp_path, capfd):
    for name in ("a", "b"):
        write_vti(tmp_path / f"{name}.vti", {"rho": values(60)})
    series = write_pvd(tmp_path / "parts.pvd", [(1.0, "a.vti"), (1.0, "b.vti")])

    code, error = run_cli(capfd, series, tmp_path / "out.hrc")

    assert code == 1 and error == (f"headrace convert: {series}: timestep 1: expected one dataset per timestep "
                                   "(parts of a step are not joined), found a.vti and b.vti")


def test_two_pvd_files_at_once_are_a_usage_error(tmp_path, capfd):
    write_vti(tmp_path / "a.vti", {"rho": values(60)})
    series = [write_pvd(tmp_path / f"{name}.pvd", [(0.0, "a.vti")]) for name in ("x", "y")]

    code, error = run_cli(capfd, *series, tmp_path / "out.hrc")

    assert code == 2 and "format pvd converts one collection at a time" in error
