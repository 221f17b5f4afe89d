"""``headrace export --to vtk``: volumes, flow fields (every layout) and particles written as .vti / .vtp
with a .pvd series, read back with vtk and compared value for value with ``ds.read``; frame ranges, the
output folder's rules and failures that leave nothing behind."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("vtkmodules", reason="VTK export needs the vtk package (scripts/setup.sh installs it)")

from vtkmodules.util.numpy_support import vtk_to_numpy  # noqa: E402
from vtkmodules.vtkIOXML import vtkXMLImageDataReader, vtkXMLPolyDataReader  # noqa: E402

import headrace  # noqa: E402
from headrace import errors, export  # noqa: E402
from headrace.workloads import streamlines  # noqa: E402
from headrace.cli.export import FrameRange  # noqa: E402
from headrace.cli.main import main  # noqa: E402
from headrace.convert import convert  # noqa: E402
from headrace.export import to_vtk  # noqa: E402
from headrace.generate import generate_amr, generate_flow, generate_particles, generate_volume  # noqa: E402
from headrace.generate.flow import from_blocks  # noqa: E402


def read_vtk(path: Path):
    reader = vtkXMLImageDataReader() if path.suffix == ".vti" else vtkXMLPolyDataReader()
    reader.SetFileName(str(path))
    reader.Update()
    return reader.GetOutput()


def point_array(data, name: str) -> np.ndarray:
    array = data.GetPointData().GetArray(name)
    assert array is not None, f"no point array {name!r}"
    return vtk_to_numpy(array)


def pvd_entries(path: Path) -> list[tuple[float, str]]:
    root = ElementTree.parse(path).getroot()
    assert root.tag == "VTKFile" and root.get("type") == "Collection"
    return [(float(entry.get("timestep")), entry.get("file")) for entry in root.iter("DataSet")]


def assert_grid_export(ds, result, frames: list[int]) -> None:
    """Every frame's .vti holds the container's grid and every field as ``ds.read`` returns it."""
    dims = [int(d) for d in ds.attributes["grid_dims"]]
    assert result.frames == frames and len(result.files) == len(frames)
    assert pvd_entries(result.series) == [(ds.frames[i].time, file.name) for i, file in zip(frames, result.files)]
    for index, file in zip(frames, result.files):
        image = read_vtk(file)
        assert list(image.GetDimensions()) == dims
        assert list(image.GetOrigin()) == list(ds.attributes["grid_origin"])
        assert list(image.GetSpacing()) == list(ds.attributes["grid_spacing"])
        for field in ds.fields:
            expected = ds.read(index, field.name)
            found = point_array(image, field.name)
            assert found.dtype == expected.dtype
            np.testing.assert_array_equal(found.reshape(expected.shape), expected)


def test_a_volume_becomes_a_vti_series(tmp_path):
    source = generate_volume(tmp_path / "v.hrc", dims=(9, 7, 5), frames=3)
    ds = headrace.open(source)

    result = to_vtk(source, tmp_path / "out")

    assert_grid_export(ds, result, [0, 1, 2])
    assert result.kind == "vti" and result.fields == ["scalar"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["v.pvd", "v_0000.vti", "v_0001.vti", "v_0002.vti"]
    assert read_vtk(result.files[0]).GetPointData().GetScalars().GetName() == "scalar"


@pytest.mark.parametrize("layout", ["blocks", "hilbert"])
@pytest.mark.parametrize("dims", [(8, 8, 8), (9, 7, 5)], ids=["divided", "partial"])
def test_flow_fields_in_every_layout_become_vti_vectors(tmp_path, layout, dims):
    """Blocks and partitions, whole or partial at the edges (their padding never exported)."""
    blocks = generate_flow(tmp_path / "f.hrc", dims=dims, block=(4, 4, 4), frames=2)
    source = blocks
    if layout == "hilbert":
        source = tmp_path / "h.hrc"
        streamlines.convert_to_hilbert(blocks, source, bits=2, chunk_pages=3)
    ds = headrace.open(source)
    assert ds.attributes["layout"] == layout

    result = to_vtk(source, tmp_path / "out")

    assert_grid_export(ds, result, [0, 1])
    # independent of ds.read's reordering: the native blocks put back on the grid by the generator's inverse
    stored = headrace.open(blocks).read(1, "velocity", stored_order=True)
    grid = from_blocks(stored, dims, (4, 4, 4))
    image = read_vtk(result.files[1])
    np.testing.assert_array_equal(point_array(image, "velocity"), grid.reshape(-1, 3))
    assert image.GetPointData().GetVectors().GetName() == "velocity"


def test_particles_become_vtp_points_with_vertex_cells_radius_and_colour(tmp_path):
    source = generate_particles(tmp_path / "p.hrc", particles=500, frames=3)
    ds = headrace.open(source)

    result = to_vtk(source, tmp_path / "out", frames=slice(1, 3), compression="zlib")

    assert result.kind == "vtp" and result.frames == [1, 2]
    assert pvd_entries(result.series) == [(1.0, "p_0001.vtp"), (2.0, "p_0002.vtp")]
    for index, file in zip(result.frames, result.files):
        records = ds.read(index, "particles")
        poly = read_vtk(file)
        np.testing.assert_array_equal(vtk_to_numpy(poly.GetPoints().GetData()), records[:, 0:3])
        assert poly.GetNumberOfVerts() == 500 and poly.GetNumberOfCells() == 500
        np.testing.assert_array_equal(point_array(poly, "radius"), records[:, 3])
        np.testing.assert_array_equal(point_array(poly, "colour"), records[:, 4:8])


def test_point_sets_with_a_position_field_keep_their_fields_and_point_type(tmp_path):
    rng = np.random.default_rng(3)
    positions = [rng.random((n, 3)) for n in (4, 9)]  # float64, changing counts
    with headrace.Writer(tmp_path / "s.hrc", [headrace.FieldSpec("position", "float64", 3),
                                               headrace.FieldSpec("id", "int64", 1),
                                               headrace.FieldSpec("spin", "int8", 2)]) as writer:
        for t, points in enumerate(positions):
            frame = writer.add_frame(time=0.5 * t)
            writer.write(frame, "position", points)
            writer.write(frame, "id", np.arange(len(points), dtype=np.int64) * 7)
            writer.write(frame, "spin", rng.integers(-100, 100, (len(points), 2)).astype(np.int8))
    ds = headrace.open(tmp_path / "s.hrc")

    result = to_vtk(ds.path, tmp_path / "out", compression="lz4")

    assert result.fields == ["position", "id", "spin"]
    for index, file in enumerate(result.files):
        poly = read_vtk(file)
        points = vtk_to_numpy(poly.GetPoints().GetData())
        assert points.dtype == np.float64
        np.testing.assert_array_equal(points, ds.read(index, "position"))
        np.testing.assert_array_equal(point_array(poly, "id"), ds.read(index, "id").reshape(-1))
        np.testing.assert_array_equal(point_array(poly, "spin"), ds.read(index, "spin"))
    # and the series converts back to the same container values
    back = headrace.open(convert(result.series, tmp_path / "back.hrc"))
    assert [frame.time for frame in back.frames] == [0.0, 0.5]
    np.testing.assert_array_equal(back.read(1, "spin"), ds.read(1, "spin"))


@pytest.mark.parametrize("compression, compressor", [("none", None), ("zlib", "vtkZLibDataCompressor"),
                                                     ("lz4", "vtkLZ4DataCompressor"), ("lzma", "vtkLZMADataCompressor")])
def test_every_compression_reads_back_the_same(tmp_path, compression, compressor):
    source = generate_volume(tmp_path / "v.hrc", dims=(6, 5, 4), frames=1)

    result = to_vtk(source, tmp_path / "out", compression=compression)

    head = result.files[0].read_bytes()[:400].decode("latin-1")
    assert 'header_type="UInt64"' in head
    assert (f'compressor="{compressor}"' in head) if compressor else "compressor" not in head
    assert_grid_export(headrace.open(source), result, [0])


def test_fields_selects_what_a_grid_exports(tmp_path):
    with headrace.Writer(tmp_path / "g.hrc", [headrace.FieldSpec("a", "float32", 1), headrace.FieldSpec("b", "uint16", 2),
                                              headrace.FieldSpec("seeds", "float32", 3)]) as writer:
        writer.set_attribute("grid_dims", [3, 2, 2])
        writer.set_attribute("grid_origin", [0.0, 1.0, 2.0])
        writer.set_attribute("grid_spacing", [0.5, 0.5, 0.5])
        frame = writer.add_frame(time=0.0)
        writer.write(frame, "a", np.arange(12, dtype=np.float32))
        writer.write(frame, "b", np.arange(24, dtype=np.uint16).reshape(12, 2))
        writer.write(frame, "seeds", np.zeros((5, 3), np.float32))  # not on the grid

    with pytest.raises(errors.UsageError, match=r"field 'seeds' reads as \(5, 3\) in frame 0, not one value per grid point"):
        to_vtk(tmp_path / "g.hrc", tmp_path / "out")
    assert not (tmp_path / "out").exists()

    result = to_vtk(tmp_path / "g.hrc", tmp_path / "out", fields=["b", "a"])

    image = read_vtk(result.files[0])
    np.testing.assert_array_equal(point_array(image, "b"), np.arange(24, dtype=np.uint16).reshape(12, 2))
    assert image.GetPointData().GetArray("seeds") is None


# --- frames ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [("0:8", slice(0, 8)), ("-1", -1), (":", slice(None, None)),
                                            ("-3:", slice(-3, None)), (":-2", slice(None, -2)), ("4", 4)])
def test_frame_range_words(text, expected):
    assert FrameRange().parse(text) == expected


@pytest.mark.parametrize("frames, expected", [(None, [0, 1, 2, 3, 4]), (-1, [4]), (slice(1, 3), [1, 2]),
                                              (slice(-2, None), [3, 4]), ([4, 0], [4, 0]), (slice(3, 99), [3, 4])])
def test_select_frames(frames, expected):
    assert export.select_frames(5, frames, "x.hrc") == expected


@pytest.mark.parametrize("frames, message", [(5, "frame 5 out of range"), (-6, "frame -6 out of range"),
                                             (slice(4, 2), "select none of its 5 frames")])
def test_frames_out_of_range_are_usage_errors(frames, message):
    with pytest.raises(errors.UsageError, match=message):
        export.select_frames(5, frames, "x.hrc")


def test_cli_exports_a_range_with_json(tmp_path, capfd):
    source = generate_volume(tmp_path / "v.hrc", dims=(4, 4, 4), frames=6)

    assert main(["export", str(source), "--to", "vtk", str(tmp_path / "out"), "--frames=-3:", "--json"]) == 0

    summary = json.loads(capfd.readouterr().out)
    assert summary["frames"] == [3, 4, 5] and summary["kind"] == "vti"
    assert summary["series"] == str(tmp_path / "out" / "v.pvd")
    assert_grid_export(headrace.open(source), export.VtkExport(
        Path(summary["series"]), [Path(p) for p in summary["files"]], [3, 4, 5], ["scalar"], "vti"), [3, 4, 5])


def test_cli_says_where_the_series_is(tmp_path, capfd):
    source = generate_particles(tmp_path / "p.hrc", particles=10, frames=2)

    assert main(["export", str(source), "--to", "vtk", str(tmp_path / "out"), "--frames", "-1"]) == 0

    out = capfd.readouterr().out
    assert "wrote 1 frames of particles as .vtp" in out and str(tmp_path / "out" / "p.pvd") in out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["p.pvd", "p_0001.vtp"]


# --- the output folder and failures --------------------------------------------------------------------


def test_a_folder_holding_files_needs_force_which_replaces_only_same_names(tmp_path, capfd):
    source = generate_volume(tmp_path / "v.hrc", dims=(4, 4, 4), frames=2)
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "v_0000.vti").write_text("old")

    assert main(["export", str(source), "--to", "vtk", str(out)]) == 2
    error = capfd.readouterr().err.strip()
    assert error == f"headrace export: {out} holds files: --force writes into it, replacing files of the same names"
    assert (out / "v_0000.vti").read_text() == "old"

    assert main(["export", str(source), "--to", "vtk", str(out), "--force"]) == 0

    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "v.pvd", "v_0000.vti", "v_0001.vti"]
    assert (out / "notes.txt").read_text() == "mine"
    assert_grid_export(headrace.open(source), export.VtkExport(out / "v.pvd", [out / "v_0000.vti", out / "v_0001.vti"],
                                                               [0, 1], ["scalar"], "vti"), [0, 1])


def test_an_empty_existing_folder_is_written_into(tmp_path):
    source = generate_volume(tmp_path / "v.hrc", dims=(4, 4, 4), frames=1)
    (tmp_path / "out").mkdir()

    result = to_vtk(source, tmp_path / "out")

    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["v.pvd", "v_0000.vti"]
    assert result.series == tmp_path / "out" / "v.pvd"


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("existing", [False, True])
@pytest.mark.parametrize("make", [lambda path: generate_volume(path, dims=(4, 4, 4), frames=3),
                                  lambda path: generate_amr(path, cells=3000, levels=2, frames=3, brick=4)],
                         ids=["volume", "amr"])  # AMR: a .vthb and its folder of blocks per frame
def test_a_failure_midway_leaves_nothing(tmp_path, monkeypatch, existing, make):
    source = make(tmp_path / "v.hrc")
    out = tmp_path / "out"
    if existing:
        out.mkdir()
    written = []
    real_write = export._write_dataset

    def failing_write(dataset, suffix, path, compression):
        if len(written) == 2:
            raise OSError(28, "No space left on device")
        real_write(dataset, suffix, path, compression)
        written.append(path)

    monkeypatch.setattr(export, "_write_dataset", failing_write)

    with pytest.raises(OSError, match="No space left"):
        to_vtk(source, out)

    assert len(written) == 2 and not any(path.exists() for path in written)
    assert (out.is_dir() and not any(out.iterdir())) if existing else not out.exists()
    assert leftovers(tmp_path) == []


def test_an_interrupt_leaves_nothing(tmp_path, monkeypatch):
    source = generate_volume(tmp_path / "v.hrc", dims=(4, 4, 4), frames=2)

    def interrupted(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        to_vtk(source, tmp_path / "out", progress=interrupted)

    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []


def test_a_container_that_is_neither_grid_nor_particles_is_refused(tmp_path, capfd):
    np.save(tmp_path / "x.npy", np.zeros((5, 2), np.float32))
    source = convert(tmp_path / "x.npy", tmp_path / "x.hrc")

    assert main(["export", str(source), "--to", "vtk", str(tmp_path / "out")]) == 2

    error = capfd.readouterr().err.strip()
    assert error == (f"headrace export: {source}: neither a grid (no attribute grid_dims), AMR (no layout 'amr') nor "
                     "particles (no field 'position' of 3 components or 'particles' of 8): nothing says where its "
                     "elements are")
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []


def test_frames_sharing_a_time_are_refused(tmp_path):
    with headrace.Writer(tmp_path / "s.hrc", [headrace.FieldSpec("position", "float32", 3)]) as writer:
        for _ in range(2):
            writer.write(writer.add_frame(time=1.0), "position", np.zeros((2, 3), np.float32))

    with pytest.raises(errors.UsageError, match="frames 0 and 1 share time 1"):
        to_vtk(tmp_path / "s.hrc", tmp_path / "out")
    to_vtk(tmp_path / "s.hrc", tmp_path / "out", frames=1)  # one of them alone is fine


def test_an_output_that_is_a_file_or_in_a_missing_folder_is_refused(tmp_path):
    source = generate_volume(tmp_path / "v.hrc", dims=(4, 4, 4), frames=1)
    (tmp_path / "file").write_text("x")

    with pytest.raises(errors.UsageError, match="exists and is not a folder"):
        to_vtk(source, tmp_path / "file")
    with pytest.raises(errors.UsageError, match="does not exist"):
        to_vtk(source, tmp_path / "missing" / "out")
