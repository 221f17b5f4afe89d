"""AMReX plotfile conversion: levels to leaf bricks, element types, byte orders, ghost cells, time series,
format guessing, a public plotfile, and every kind of bad input refused with nothing written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import headrace
from headrace import errors
from headrace.amr import topology_of
from headrace.cli.main import main
from headrace.convert import amrex, convert, write_source
from headrace.convert.formats import InputFormat, guess_format, resolve_inputs
from amrex_support import (
    THREE_LEVELS,
    PlotfileData,
    brick_composite,
    composite,
    write_plotfile,
)
from convert_support import assert_no_output

PUBLIC_PLOTFILE = Path(__file__).resolve().parents[1] / "data" / "amrex" / "plt2_F"


def assert_frame_matches(ds: headrace.Dataset, frame: int, data: PlotfileData) -> None:
    """Every leaf cell of every variable equals the value written (narrowed to float32), each cell of the
    domain is in exactly one brick, and no ghost or covered coarse cell slipped in."""
    topology = topology_of(ds.attributes, ds.path)
    for index, name in enumerate(ds.attributes["amrex_variables"].split("\n")):
        values = ds.read(frame, name, stored_order=True)
        assert values.dtype == np.float32 and values.shape == (topology.cell_count, 1)
        painted, count = brick_composite(topology, values)
        assert (count == 1).all()
        np.testing.assert_array_equal(painted, composite(data, index))


def test_three_levels_two_variables_become_leaf_bricks(tmp_path):
    data = write_plotfile(tmp_path / "plt00000", time=0.25)

    ds = headrace.open(convert(data.path, tmp_path / "out.hrc"))

    assert [(f.name, f.dtype, f.components) for f in ds.fields] == [("density", "float32", 1), ("temperature", "float32", 1)]
    attributes = ds.attributes
    assert attributes["layout"] == "amr" and attributes["source_format"] == "amrex"
    assert list(attributes["amr_domain_cells"]) == [8, 6, 4]
    assert list(attributes["amr_refinement"]) == [2, 4]
    assert list(attributes["grid_origin"]) == [-1.0, 0.0, 2.0]
    assert list(attributes["grid_spacing"]) == [0.5, 0.5, 0.5]
    assert attributes["amrex_variables"] == "density\ntemperature"
    assert attributes["amrex_version"] == "HyperCLaw-V1.1"
    ranges = [[float(np.min([v[c].min() for level in data.values for v in level])),
               float(np.max([v[c].max() for level in data.values for v in level]))] for c in range(2)]
    assert list(attributes["amrex_value_range"]) == ranges[0] + ranges[1]
    assert ds.frames[0].time == 0.25
    assert ds.frames[0].bbox == ((-1.0, 0.0, 2.0), (3.0, 3.0, 4.0))
    topology = topology_of(attributes, ds.path)
    # Leaf cells: level 0's 192 less the 44 under level 1's 352, level 1's less the 16 under level 2's 1024.
    assert topology.cell_count == (192 - 44) + (352 - 16) + 1024
    assert set(topology.bricks[:, 0]) == {0, 1, 2}
    assert_frame_matches(ds, 0, data)


@pytest.mark.parametrize("dtype", ["<f8", ">f8", "<f4", ">f4"])
@pytest.mark.parametrize("ghosts", [(0, 0, 0), (1, 1, 1), (2, 1, 0)])
def test_element_types_byte_orders_and_ghost_cells(tmp_path, dtype, ghosts):
    data = write_plotfile(tmp_path / "plt", dtype=dtype, ghosts=ghosts, fabs_per_file=3, seed=4)

    ds = headrace.open(convert(data.path, tmp_path / "out.hrc"))

    assert_frame_matches(ds, 0, data)


def test_header_box_bounds_measured_from_cell_zero_are_taken_too(tmp_path):
    """AmrLevel codes (Castro, ...) write each box's bounds from cell 0, not from the domain's corner."""
    data = write_plotfile(tmp_path / "plt", bounds_from_cell_zero=True)

    assert_frame_matches(headrace.open(convert(data.path, tmp_path / "out.hrc")), 0, data)


def test_a_time_series_from_a_parent_folder_in_natural_order(tmp_path):
    series = tmp_path / "run"
    written = {}
    for step, name in ((2, "plt2"), (10, "plt10"), (1, "plt1")):
        # The later plotfiles list each level's boxes in another order: frames map boxes, not positions.
        boxes = THREE_LEVELS if step == 1 else [list(reversed(level)) for level in THREE_LEVELS]
        written[step] = write_plotfile(series / name, boxes, time=0.5 * step, seed=step, fabs_per_file=1)

    assert resolve_inputs(series) == [series / "plt1", series / "plt2", series / "plt10"]
    ds = headrace.open(convert(series, tmp_path / "out.hrc"))

    assert [frame.time for frame in ds.frames] == [0.5, 1.0, 5.0]
    for frame, step in enumerate((1, 2, 10)):
        assert_frame_matches(ds, frame, written[step])


def test_plotfiles_given_in_any_order_become_frames_in_natural_order(tmp_path):
    late = write_plotfile(tmp_path / "plt00010", time=2.0, seed=1)
    early = write_plotfile(tmp_path / "plt00002", time=1.0, seed=2)

    ds = headrace.open(convert([late.path, early.path], tmp_path / "out.hrc"))

    assert [frame.time for frame in ds.frames] == [1.0, 2.0]
    assert_frame_matches(ds, 0, early)
    assert_frame_matches(ds, 1, late)


def test_pieces_smaller_than_a_brick_and_progress_over_every_input_byte(tmp_path, monkeypatch):
    monkeypatch.setattr(amrex, "PIECE_BYTES", 400)  # 100 cells: bricks of 512 cells go alone, small ones together
    data = write_plotfile(tmp_path / "plt", ghosts=(1, 1, 1))
    source = amrex.open_amrex([data.path])
    pieces = [piece for frame in source.frames() for piece in frame.pieces]
    done = []

    ds = headrace.open(write_source(amrex.open_amrex([data.path]), tmp_path / "out.hrc", progress=done.append))

    assert max(len(piece.array) for piece in pieces) == 512 and min(len(piece.array) for piece in pieces) < 100
    assert done[-1] == source.total_bytes == sum(piece.source_bytes for piece in pieces)
    assert_frame_matches(ds, 0, data)


def test_the_format_is_guessed_from_the_folder(tmp_path):
    hyperclaw = write_plotfile(tmp_path / "a").path
    other = write_plotfile(tmp_path / "b", version="NavierStokes-V1.1").path  # known by its Level_0 folder
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "Header").write_text("not a plotfile\n")

    assert guess_format([hyperclaw, other]) is InputFormat.AMREX
    assert resolve_inputs(str(tmp_path / "[ab]")) == [hyperclaw, other]
    with pytest.raises(errors.UsageError, match="cannot tell the input format"):
        guess_format([tmp_path / "plain"])


def test_the_cli_converts_a_plotfile_folder(tmp_path, capsys):
    data = write_plotfile(tmp_path / "plt00000")
    output = tmp_path / "out.hrc"

    assert main(["convert", str(data.path), str(output), "--json"]) == 0

    summary = json.loads(capsys.readouterr().out)
    assert summary["format"] == "amrex" and summary["frames"] == 1
    assert_frame_matches(headrace.open(output), 0, data)


def test_a_public_plotfile_matches_its_cell_h_ranges(tmp_path):
    """PeleLMeX's plt2_F from olivecha/amrex-kitchen (tests/data/amrex/README.md): three levels of
    float64 FABs; levels 1 and 2 cover the domain, so every brick is a level-2 box whose values must
    range exactly over what Level_2/Cell_H states for it."""
    ds = headrace.open(convert(PUBLIC_PLOTFILE, tmp_path / "out.hrc"))

    topology = topology_of(ds.attributes, ds.path)
    assert list(ds.attributes["amr_domain_cells"]) == [8, 8, 8] and list(ds.attributes["amr_refinement"]) == [2, 2]
    assert [f.name for f in ds.fields] == ["x_velocity", "density", "temp"]
    assert len(topology.bricks) == 64 and set(topology.bricks[:, 0]) == {2}
    lines = (PUBLIC_PLOTFILE / "Level_2" / "Cell_H").read_text().split("\n")
    boxes = [tuple(int(v) for v in line.replace("(", " ").replace(")", " ").replace(",", " ").split()[:3])
             for line in lines[5:69]]
    heads = [i for i, line in enumerate(lines) if line == "64,3"]
    minimum = np.array([[float(v) for v in line.split(",")[:-1]] for line in lines[heads[0] + 1:heads[0] + 65]])
    maximum = np.array([[float(v) for v in line.split(",")[:-1]] for line in lines[heads[1] + 1:heads[1] + 65]])
    for variable, name in enumerate(["x_velocity", "density", "temp"]):
        blocks = topology.blocks(ds.read(0, name, stored_order=True))
        for block in blocks:
            box = boxes.index(block.lower)
            assert block.data.min() == np.float32(minimum[box, variable])
            assert block.data.max() == np.float32(maximum[box, variable])


# --- bad input: each refused with one line naming the file (and the box), nothing written ---------------


def edit(path: Path, old: str, new: str) -> None:
    """Replace the one occurrence of ``old`` in ``path``."""
    content = path.read_bytes()
    assert content.count(old.encode()) == 1, old
    path.write_bytes(content.replace(old.encode(), new.encode()))


def assert_refused(tmp_path: Path, source, error: type[Exception], match: str) -> None:
    output = tmp_path / "out.hrc"
    with pytest.raises(error, match=match) as caught:
        convert(source, output)
    assert "\n" not in str(caught.value)
    assert_no_output(output)


BOX_B = r"box \(\(16,-2,2\) \(19,1,5\) \(0,0,0\)\)"  # level 1's second box, as AMReX writes it


def test_a_missing_fab_file_is_named_with_its_box(tmp_path):
    data = write_plotfile(tmp_path / "plt", fabs_per_file=1)
    (data.path / "Level_1" / "Cell_D_00001").unlink()

    assert_refused(tmp_path, data.path, errors.FileOpenError,
                   rf"Level_1/Cell_D_00001: cannot open for reading: .*\(the FAB of {BOX_B} in .*Level_1/Cell_H\)")


def test_a_truncated_fab_file_is_named_with_its_box(tmp_path):
    data = write_plotfile(tmp_path / "plt")
    fab_file = data.path / "Level_1" / "Cell_D_00000"
    fab_file.write_bytes(fab_file.read_bytes()[:-8])

    assert_refused(tmp_path, data.path, errors.TruncatedFileError,
                   rf"Level_1/Cell_D_00000: offset \d+: expected 1024 bytes of values for {BOX_B} .*, found 1016 bytes")


def test_a_cell_h_with_other_boxes_than_the_header_is_refused(tmp_path):
    data = write_plotfile(tmp_path / "plt")
    one_box = write_plotfile(tmp_path / "one", [THREE_LEVELS[0], THREE_LEVELS[1][:1], THREE_LEVELS[2][:1]])
    shutil.rmtree(data.path / "Level_1")
    shutil.copytree(one_box.path / "Level_1", data.path / "Level_1")

    assert_refused(tmp_path, data.path, errors.CorruptIndexError,
                   r"Level_1/Cell_H: offset \d+: expected 2 boxes, as .*plt/Header says, found 1$")


def test_a_cell_h_whose_fab_count_disagrees_is_refused(tmp_path):
    data = write_plotfile(tmp_path / "plt")
    edit(data.path / "Level_1" / "Cell_H", ")\n2\nFabOnDisk", ")\n3\nFabOnDisk")

    assert_refused(tmp_path, data.path, errors.CorruptIndexError,
                   r"Level_1/Cell_H: offset \d+: expected 2 FabOnDisk lines, one per box, found 3")


def test_a_fab_whose_box_disagrees_with_cell_h_is_refused(tmp_path):
    data = write_plotfile(tmp_path / "plt", fabs_per_file=1)
    edit(data.path / "Level_1" / "Cell_D_00001", "((16,-2,2) (19,1,5) (0,0,0)) 2", "((16,-2,2) (19,1,4) (0,0,0)) 2")

    assert_refused(tmp_path, data.path, errors.CorruptIndexError,
                   r"Level_1/Cell_D_00001: offset 0: expected box \(\(16,-2,2\) \(19,1,5\) \(0,0,0\)\) and 2 components "
                   r".*found \(\(16,-2,2\) \(19,1,4\) \(0,0,0\)\) and 2")


def test_header_bounds_that_disagree_with_cell_h_are_refused(tmp_path):
    data = write_plotfile(tmp_path / "plt")
    edit(data.path / "Header", "\n-0.5 1.0\n", "\n-0.25 1.0\n")  # level 1's first box along x

    assert_refused(tmp_path, data.path, errors.CorruptIndexError,
                   r"plt/Header: offset \d+: expected box 0 of level 1 to span .*\(box \(\(10,-2,0\) \(15,3,7\) \(0,0,0\)\) "
                   r"of .*Level_1/Cell_H\), found \[\[-0.25, 1.0\]")


def test_values_outside_the_cell_h_range_are_refused(tmp_path):
    data = write_plotfile(tmp_path / "plt", fabs_per_file=1)
    fab_file = data.path / "Level_1" / "Cell_D_00001"
    content = bytearray(fab_file.read_bytes())
    first_temperature = content.index(b"\n") + 1 + 64 * 8  # past the header line and 4 x 4 x 4 densities
    content[first_temperature:first_temperature + 8] = np.float64(1000.0).tobytes()
    fab_file.write_bytes(bytes(content))

    assert_refused(tmp_path, data.path, errors.CorruptIndexError,
                   rf"Level_1/Cell_D_00001: offset {first_temperature}: expected temperature of {BOX_B} from .* to .*, "
                   r"as .*Level_1/Cell_H says, found .* to 1000.0$")


def test_a_cell_h_range_that_disagrees_with_the_values_is_refused(tmp_path):
    data = write_plotfile(tmp_path / "plt", dtype="<f4")
    stated = f"{float(data.values[0][1][0].max()):.17e},"
    edit(data.path / "Level_0" / "Cell_H", stated, f"{float(data.values[0][1][0].max()) + 1:.17e},")

    assert_refused(tmp_path, data.path, errors.CorruptIndexError,
                   r"Level_0/Cell_D_00000: offset \d+: expected density of box \(\(8,-2,0\) \(11,3,3\) \(0,0,0\)\)")


@pytest.mark.parametrize(("boxes", "match"), [
    ([THREE_LEVELS[0], [((10, -2, 0), (16, 4, 8)), ((14, -2, 2), (18, 2, 6))], THREE_LEVELS[2]],
     r"Level_1/Cell_H: box \(\(10,-2,0\) \(15,3,7\) \(0,0,0\)\): expected boxes of level 1 that do not overlap, "
     r"found it overlaps box \(\(14,-2,2\) \(17,1,5\) \(0,0,0\)\)"),
    ([*THREE_LEVELS[:2], [*THREE_LEVELS[2], ((32, -16, 0), (40, -8, 8))]],
     r"Level_2/Cell_H: box \(\(32,-16,0\) \(39,-9,7\) \(0,0,0\)\): expected a box inside the boxes of level 1 "
     r"\(properly nested\), found one reaching past them"),
    ([THREE_LEVELS[0], [((11, -2, 0), (16, 4, 8)), THREE_LEVELS[1][1]], THREE_LEVELS[2][:1]],
     r"Level_1/Cell_H: box \(\(11,-2,0\) \(15,3,7\) \(0,0,0\)\): expected a box of whole level-0 cells"),
    ([[THREE_LEVELS[0][0], ((8, -2, 0), (12, 4, 5))], *THREE_LEVELS[1:]],
     r"Level_0/Cell_H: box \(\(8,-2,0\) \(11,3,4\) \(0,0,0\)\): expected a box inside level 0's domain "
     r"\(\(4,-2,0\) \(11,3,3\) \(0,0,0\)\), found one outside it"),
], ids=["overlap", "not-nested", "not-whole-coarse-cells", "outside-domain"])
def test_boxes_that_overlap_are_not_nested_or_leave_the_domain_are_refused(tmp_path, boxes, match):
    data = write_plotfile(tmp_path / "plt", boxes)

    assert_refused(tmp_path, data.path, errors.CorruptIndexError, match)


# Lines of the Header write_plotfile makes: 0 version, 1 variable count, 2-3 names, 4 dimensionality, 5 time,
# 6 finest level, 7 prob_lo, 8 prob_hi, 9 ratios, 10 domains, 11 steps, 12-14 cell sizes, 15 coordinates,
# 16 boundary width, 17 level 0's first line.
@pytest.mark.parametrize(("line", "text", "error", "match"), [
    (1, "two", errors.CorruptIndexError, r"expected the number of variables, found 'two'"),
    (4, "2", errors.BadDataError, r"expected a 3-D plotfile \(headrace converts 3-D AMR data only\), found a 2-D one"),
    (8, "3.0 3.0", errors.CorruptIndexError, r"expected prob_hi as three numbers, found '3.0 3.0'"),
    (9, "2 1 ", errors.CorruptIndexError, r"expected refinement ratios of at least 2, found \[2, 1\]"),
    (12, "0.5 0.5 0.25", errors.CorruptIndexError, r"expected level 0's cell size \[0.5, 0.5, 0.5\]"),
    (15, "1", errors.BadDataError, r"expected Cartesian coordinates \(0\), found 1 \(cylindrical\)"),
    (17, "1 2 0.0", errors.CorruptIndexError, r"expected '0 <boxes> <time>' starting level 0"),
    (-2, "", errors.CorruptIndexError, r"expected level 2's FabArray prefix such as Level_2/Cell, found an empty line"),
])
def test_a_bad_header_line_is_refused_naming_its_offset(tmp_path, line, text, error, match):
    data = write_plotfile(tmp_path / "plt")
    header = data.path / "Header"
    lines = header.read_text().split("\n")
    offset = sum(len(v) + 1 for v in lines[:line])
    lines[line] = text
    header.write_text("\n".join(lines))

    assert_refused(tmp_path, data.path, error, rf"plt/Header: offset {offset}: {match}")


def test_a_header_cut_short_is_refused(tmp_path):
    data = write_plotfile(tmp_path / "plt")
    header = data.path / "Header"
    cut = "".join(header.read_text().splitlines(keepends=True)[:13])  # through level 0's cell size
    header.write_text(cut)

    assert_refused(tmp_path, data.path, errors.CorruptIndexError,
                   rf"plt/Header: offset {len(cut)}: expected level 1's cell size as three numbers, found the end of the file")


def test_other_vismf_versions_and_real_formats_are_refused(tmp_path):
    data = write_plotfile(tmp_path / "plt", fabs_per_file=1)
    edit(data.path / "Level_0" / "Cell_H", "1\n1\n2\n", "2\n1\n2\n")
    assert_refused(tmp_path, data.path, errors.UnsupportedVersionError, r"Level_0/Cell_H: offset 0: expected VisMF header version 1")

    other = write_plotfile(tmp_path / "other", fabs_per_file=1)
    edit(other.path / "Level_2" / "Cell_D_00000", "(8 7 6 5 4 3 2 1)", "(2 1 4 3 6 5 8 7)")
    assert_refused(tmp_path, other.path, errors.UnsupportedVersionError,
                   r"Level_2/Cell_D_00000: offset 0: expected IEEE float64 or float32 values, big or little endian")


@pytest.mark.parametrize(("change", "where", "match"), [
    ({"boxes": [*THREE_LEVELS[:2], [THREE_LEVELS[2][0], ((60, -4, 8), (68, 4, 16))]]}, "Level_2/Cell_H",
     r"expected the boxes of .*first/Level_2/Cell_H as in .*first \(every plotfile of a series has one topology\), "
     r"found box \(\(60,-4,8\) \(67,3,15\) \(0,0,0\)\), which it lacks"),
    ({"boxes": [*THREE_LEVELS[:2], [THREE_LEVELS[2][0]] * 2]}, "Level_2/Cell_H",
     r"expected the boxes of .*first/Level_2/Cell_H .*, found no box \(\(60,-4,12\) \(67,3,19\) \(0,0,0\)\)"),
    ({"variables": ("density", "pressure")}, "Header", r"expected the variables density, temperature as in .*, found density, pressure"),
    ({"boxes": THREE_LEVELS[:2], "refinement": (2,)}, "Header", r"expected levels 3 as in .*, found 2"),
], ids=["boxes", "duplicate-box", "variables", "levels"])
def test_a_series_plotfile_of_another_topology_is_refused_naming_it(tmp_path, change, where, match):
    write_plotfile(tmp_path / "run" / "first", time=0.0)
    second = write_plotfile(tmp_path / "run" / "second", time=1.0, **change)

    assert_refused(tmp_path, tmp_path / "run", errors.CorruptIndexError, rf"{second.path}/{where}: {match}")
