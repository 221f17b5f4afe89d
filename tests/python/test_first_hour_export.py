"""Issue 35: ``headrace export --to vtk`` of the AMR files headrace makes (``generate amr``) and converts (AMReX
plotfiles): VTK's overlapping AMR (``.vthb``) and a ``.pvd`` series, read back with vtk's own XML reader and
compared block for block, cell for cell with ``headrace.open(...).read``; a failure leaves nothing behind."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("vtkmodules", reason="VTK export needs the vtk package (scripts/setup.sh installs it)")

from vtkmodules.util.numpy_support import vtk_to_numpy  # noqa: E402
from vtkmodules.vtkIOXML import vtkXMLUniformGridAMRReader  # noqa: E402

import headrace  # noqa: E402
from headrace import errors, export  # noqa: E402
from headrace.amr import AmrTopology, topology_of  # noqa: E402
from headrace.cli.main import main  # noqa: E402
from headrace.convert import convert  # noqa: E402
from headrace.export import to_vtk  # noqa: E402
from headrace.generate import generate_amr  # noqa: E402
from amrex_support import THREE_LEVELS_REFINEMENT, write_plotfile  # noqa: E402

PUBLIC_PLOTFILE = Path(__file__).resolve().parents[1] / "data" / "amrex" / "plt2_F"


def read_vthb(path: Path):
    reader = vtkXMLUniformGridAMRReader()
    reader.SetFileName(str(path))
    reader.SetMaximumLevelsToReadByDefault(0)  # every level
    reader.Update()
    return reader.GetOutput()


def blocks_of(amr, level: int) -> int:
    count = getattr(amr, "GetNumberOfBlocks", None)  # vtk 9.6 and later; GetNumberOfDataSets before
    return count(level) if count is not None else amr.GetNumberOfDataSets(level)


def block(amr, level: int, index: int):
    get = getattr(amr, "GetDataSetAsImageData", None) or amr.GetDataSet
    return get(level, index)


def pvd_entries(path: Path) -> list[tuple[float, str]]:
    root = ElementTree.parse(path).getroot()
    assert root.tag == "VTKFile" and root.get("type") == "Collection"
    return [(float(entry.get("timestep")), entry.get("file")) for entry in root.iter("DataSet")]


def numbers(text: str) -> list[float]:
    return [float(v) for v in text.split()]


def assert_amr_export(ds, result, frames: list[int], fields: list[str]) -> None:
    """Each frame's .vthb read by vtk holds the container's levels, one block per brick in brick order with
    the brick's box, origin and cell size, and every field's cells as ``ds.read`` gives them."""
    topology = topology_of(ds.attributes, ds.path)
    assert isinstance(topology, AmrTopology)
    per_level = [topology.bricks[topology.bricks[:, 0] == level] for level in range(topology.levels)]
    assert result.kind == "vthb" and result.frames == frames and result.fields == fields
    assert pvd_entries(result.series) == [(ds.frames[i].time, file.name) for i, file in zip(frames, result.files)]
    for frame, file in zip(frames, result.files):
        amr = read_vthb(file)
        assert amr.GetClassName() == "vtkOverlappingAMR"
        assert amr.GetNumberOfLevels() == topology.levels
        assert [blocks_of(amr, level) for level in range(topology.levels)] == [len(b) for b in per_level]
        for level in range(topology.levels - 1):  # vtk derives a ratio between two levels that have blocks
            if len(per_level[level]) and len(per_level[level + 1]):
                assert amr.GetRefinementRatio(level) == topology.refinement[level]
        values = {name: ds.read(frame, name).reshape(-1) for name in fields}
        for level, bricks in enumerate(per_level):
            spacing = [0.0, 0.0, 0.0]
            amr.GetSpacing(level, spacing)
            assert spacing == [h / topology.scale(level) for h in topology.spacing]
            for index, (_, x, y, z, nx, ny, nz) in enumerate(bricks.tolist()):
                grid = block(amr, level, index)
                assert list(grid.GetExtent()) == [0, nx, 0, ny, 0, nz]
                assert list(grid.GetSpacing()) == spacing
                assert list(grid.GetOrigin()) == [o + i * h for o, i, h in zip(topology.origin, (x, y, z), spacing)]
                brick = next(b for b in range(len(topology.bricks)) if topology.bricks[b].tolist() == [level, x, y, z, nx, ny, nz])
                start, stop = topology.offsets[brick], topology.offsets[brick + 1]
                cells = grid.GetCellData()
                names = [cells.GetArrayName(k) for k in range(cells.GetNumberOfArrays())]
                assert [name for name in names if name != "vtkGhostType"] == fields
                if "vtkGhostType" in names:  # the reader's blanking: leaf bricks hide no cell of another
                    assert not vtk_to_numpy(cells.GetArray("vtkGhostType")).any()
                assert cells.GetScalars().GetName() == fields[0]
                for name in fields:
                    found = vtk_to_numpy(cells.GetArray(name))
                    assert found.dtype == values[name].dtype
                    assert np.array_equal(found, values[name][start:stop])
        # The .vthb's own metadata (what ParaView reads before any block): exact origin, spacings and boxes.
        root = ElementTree.parse(file).getroot().find("vtkOverlappingAMR")
        assert numbers(root.get("origin")) == list(topology.origin)
        for element in root.iter("Block"):
            level = int(element.get("level"))
            assert numbers(element.get("spacing")) == [h / topology.scale(level) for h in topology.spacing]
            boxes = [[int(v) for v in entry.get("amr_box").split()] for entry in element.iter("DataSet")]
            assert boxes == [[x, x + nx - 1, y, y + ny - 1, z, z + nz - 1] for _, x, y, z, nx, ny, nz in per_level[level].tolist()]
            assert all((file.parent / entry.get("file")).is_file() for entry in element.iter("DataSet"))


def test_a_generated_amr_file_exports_as_overlapping_amr_from_the_cli(tmp_path, capfd):
    """The issue's commands: ``generate amr --levels 3 --frames 2`` then ``export --to vtk out/``."""
    source = generate_amr(tmp_path / "a.hrc", cells=6000, levels=3, frames=2, brick=4, fields=("density", "temperature"))
    out = tmp_path / "out"

    assert main(["export", str(source), "--to", "vtk", str(out)]) == 0

    printed = capfd.readouterr()
    assert printed.err == ""
    assert f"wrote 2 frames of density, temperature as .vthb to {out}" in printed.out
    ds = headrace.open(source)
    result = export.VtkExport(out / "a.pvd", [out / "a_0000.vthb", out / "a_0001.vthb"], [0, 1],
                              ["density", "temperature"], "vthb")
    assert_amr_export(ds, result, [0, 1], ["density", "temperature"])
    assert sorted(p.name for p in out.iterdir()) == ["a.pvd", "a_0000", "a_0000.vthb", "a_0001", "a_0001.vthb"]
    assert len(list((out / "a_0000").iterdir())) == len(topology_of(ds.attributes, ds.path).bricks)


def test_fields_frames_and_compression_select_what_an_amr_file_exports(tmp_path):
    source = generate_amr(tmp_path / "a.hrc", cells=3000, levels=2, frames=3, brick=4, fields=("density", "temperature"))

    result = to_vtk(source, tmp_path / "out", frames=slice(1, 3), fields=["temperature"], compression="zlib")

    assert_amr_export(headrace.open(source), result, [1, 2], ["temperature"])
    assert 'compressor="vtkZLibDataCompressor"' in (tmp_path / "out" / "a_0001" / "a_0001_0.vti").read_text("latin-1")


def test_amrex_plotfiles_export_with_their_levels_ratios_and_times(tmp_path):
    """Three levels, ratios 2 then 4, a domain whose lower corner is not cell 0, two steps at their times."""
    for step, time in enumerate((0.0, 0.25)):
        write_plotfile(tmp_path / "run" / f"plt{step:05d}", time=time, seed=step)
    source = convert(tmp_path / "run", tmp_path / "run.hrc")
    ds = headrace.open(source)
    assert list(topology_of(ds.attributes, ds.path).refinement) == list(THREE_LEVELS_REFINEMENT)

    result = to_vtk(source, tmp_path / "out")

    assert_amr_export(ds, result, [0, 1], [field.name for field in ds.fields])
    assert [time for time, _ in pvd_entries(result.series)] == [0.0, 0.25]


def test_the_public_amrex_plotfile_exports_with_its_covered_levels_empty(tmp_path):
    """plt2_F's levels 0 and 1 lie wholly under level 2: leaf bricks only, so they have no block."""
    source = convert(PUBLIC_PLOTFILE, tmp_path / "plt.hrc")
    ds = headrace.open(source)

    result = to_vtk(source, tmp_path / "out")

    assert_amr_export(ds, result, [0], ["x_velocity", "density", "temp"])
    amr = read_vthb(result.files[0])
    assert [blocks_of(amr, level) for level in range(3)] == [0, 0, 64]


def amr_container(path: Path, spec: headrace.FieldSpec, elements: int) -> Path:
    topology = AmrTopology((4, 4, 4), (2,), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0),
                           np.array([[0, 0, 0, 0, 4, 4, 2], [1, 0, 0, 4, 8, 8, 4]], dtype=np.int64))
    with headrace.Writer(path, [spec]) as writer:
        for name, value in topology.attributes().items():
            writer.set_attribute(name, value)
        writer.write(writer.add_frame(time=0.0), spec.name, np.zeros((elements, spec.components), np.float32))
    return path


def test_a_field_that_is_not_one_value_per_cell_is_named_and_nothing_is_written(tmp_path, capfd):
    vectors = amr_container(tmp_path / "v.hrc", headrace.FieldSpec("velocity", "float32", 3), 288)
    short = amr_container(tmp_path / "s.hrc", headrace.FieldSpec("density", "float32", 1), 10)

    assert main(["export", str(vectors), "--to", "vtk", str(tmp_path / "out")]) == 2
    assert capfd.readouterr().err == (f"headrace export: {vectors}: field 'velocity' has 3 components per element, "
                                      "not one value per AMR cell; leave it out with --fields\n")
    with pytest.raises(errors.UsageError, match=r"s.hrc: field 'density' holds 10 elements in frame 0, not one per AMR "
                                                r"cell \(288\); leave it out with --fields"):
        to_vtk(short, tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.hrc", "v.hrc"]


def test_a_block_file_vtk_cannot_write_is_one_line_naming_the_file(tmp_path, capfd):
    """vtk's AMR writer makes a writer per block; their errors (not the AMR writer's own) are caught too."""
    source = generate_amr(tmp_path / "a.hrc", cells=3000, levels=2, frames=1, brick=4)
    ds = headrace.open(source)
    (tmp_path / "x_0000").write_text("a file where the blocks' folder goes")

    with pytest.raises(OSError) as raised:
        export._write_dataset(export._AmrPlan(ds, None, [0]).dataset(0), "vthb", tmp_path / "x_0000.vthb",
                              export.Compression.NONE)

    assert str(raised.value) == (f"{tmp_path / 'x_0000.vthb'}: vtk could not write the file: Sorry unable to create "
                                 f"directory: {tmp_path / 'x_0000'}")
    assert capfd.readouterr().err == ""  # vtk printed none of its errors


def test_force_replaces_a_frames_block_folder_whole(tmp_path):
    source = generate_amr(tmp_path / "a.hrc", cells=3000, levels=2, frames=1, brick=4)
    out = tmp_path / "out"
    to_vtk(source, out)
    (out / "a_0000" / "a_0000_999.vti").write_text("a block of an older export")
    (out / "notes.txt").write_text("the user's own")

    with pytest.raises(errors.UsageError, match="holds files: --force"):
        to_vtk(source, out)
    result = to_vtk(source, out, force=True)

    assert not (out / "a_0000" / "a_0000_999.vti").exists() and (out / "notes.txt").exists()
    assert_amr_export(headrace.open(source), result, [0], ["scalar"])
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
