"""``headrace generate amr``: a valid octree of leaf bricks fixed over time, refined where the blobs vary
most, about the cells asked for, values equal to the analytic field, ragged single-cell bricks on request."""

from __future__ import annotations

import numpy as np
import pytest

import headrace
from headrace import errors
from headrace.amr import topology_of
from headrace.cli.main import main
from headrace.generate import amr as amr_module
from headrace.generate import generate_amr
from headrace.generate.amr import SAMPLES, VARIATION_TIMES, amr_topology
from headrace.generate.volume import scalar_field

BRICK = 8


def _finest_boxes(topology):
    """Each brick's box in finest-level cells: (lower, upper) int arrays."""
    shift = (topology.levels - 1 - topology.bricks[:, 0])[:, None]
    lower = topology.bricks[:, 1:4] << shift
    return lower, lower + (topology.bricks[:, 4:7] << shift)


def _coverage(topology):
    """How many bricks hold each finest-level cell, rasterised brick by brick: (z, y, x)."""
    extent = [n << (topology.levels - 1) for n in topology.domain_cells]
    count = np.zeros(extent[::-1], dtype=np.int32)
    for (x0, y0, z0), (x1, y1, z1) in zip(*_finest_boxes(topology)):
        count[z0:z1, y0:y1, x0:x1] += 1
    return count


def _plane_morton(x, y):
    code = 0
    for bit in range(21):
        code |= ((x >> bit) & 1) << (2 * bit) | ((y >> bit) & 1) << (2 * bit + 1)
    return code


def _reference_variation(bricks, spacing, seeds):
    """Largest value range over seeds and VARIATION_TIMES at SAMPLES^3 points spread over each brick,
    straight from scalar_field."""
    h = np.asarray(spacing)[None, :] / (2.0 ** bricks[:, 0])[:, None]
    steps = np.arange(SAMPLES) / (SAMPLES - 1)
    x, y, z = ((bricks[:, 1 + a, None] + bricks[:, 4 + a, None] * steps) * h[:, a, None] for a in range(3))
    ranges = [np.ptp(scalar_field(x[:, None, None, :], y[:, None, :, None], z[:, :, None, None], float(t), seed=s)
                     .reshape(len(bricks), -1), axis=1) for s in seeds for t in VARIATION_TIMES]
    return np.max(ranges, axis=0)


@pytest.fixture(scope="module")
def two_fields(tmp_path_factory):
    path = tmp_path_factory.mktemp("amr") / "a.hrc"
    return generate_amr(path, cells=60_000, levels=3, frames=3, seed=2, fields=("density", "pressure"))


def test_the_topology_is_stored_once_valid_and_every_frame_holds_its_cells(two_fields):
    ds = headrace.open(two_fields)
    topology = topology_of(ds.attributes, str(two_fields))

    assert ds.attributes["layout"] == "amr" and ds.attributes["generator"] == "amr"
    assert list(ds.attributes["field_seeds"]) == [2, 3]
    assert [(f.name, f.dtype, f.components) for f in ds.fields] == [("density", "float32", 1), ("pressure", "float32", 1)]
    assert [frame.time for frame in ds.frames] == [0.0, 1.0, 2.0]
    topology.validate("test")
    topology.check_overlaps("test")
    assert topology.levels == 3 and topology.refinement == (2, 2)
    assert topology.spacing == (1.0 / topology.domain_cells[0],) * 3 and topology.origin == (0.0, 0.0, 0.0)
    assert set(np.unique(topology.bricks[:, 0])) == {0, 1, 2}
    assert (topology.bricks[:, 4:7] == BRICK).all()  # an octree of B^3 bricks
    for frame in range(3):
        for field in ("density", "pressure"):
            assert ds.element_count(frame, field) == topology.cell_count


@pytest.mark.parametrize("single_cell_bricks", [False, True])
def test_bricks_tile_the_domain_without_overlap_along_z_then_in_morton_order_in_a_plane(single_cell_bricks):
    topology = amr_topology(60_000, 3, seed=1, single_cell_bricks=single_cell_bricks)

    assert (_coverage(topology) == 1).all()  # no cell held twice, no hole
    lower, _ = _finest_boxes(topology)
    keys = [(int(z), _plane_morton(int(x), int(y))) for x, y, z in lower]
    assert keys == sorted(keys)
    assert len({int(z) for _, _, z in lower}) > 1


@pytest.mark.parametrize("cells,levels", [(11_264, 4), (60_000, 3), (1_000_000, 4), (3_000_000, 2), (250_000, 1),
                                          (20_000_000, 5)])
def test_the_cell_count_is_within_ten_percent(cells, levels):
    topology = amr_topology(cells, levels)

    assert abs(topology.cell_count - cells) <= 0.1 * cells
    if levels > 1 and cells >= 1_000_000:
        assert abs(topology.cell_count - cells) <= 0.01 * cells
    assert topology.levels == levels and topology.bricks[:, 0].max() == levels - 1  # level 0 may be refined whole


@pytest.mark.parametrize("single_cell_bricks", [False, True])
def test_values_are_the_analytic_field_at_cell_centres(tmp_path, monkeypatch, single_cell_bricks):
    monkeypatch.setattr(amr_module, "PIECE_CELLS", 20_000)  # many pieces on the thread pool
    monkeypatch.setattr(amr_module, "_BATCH_CELLS", 3_000)  # several batches a piece
    path = generate_amr(tmp_path / "a.hrc", cells=40_000, levels=3, frames=2, seed=7, fields=("a", "b"),
                        single_cell_bricks=single_cell_bricks, workers=3)
    ds = headrace.open(path)
    topology = topology_of(ds.attributes, str(path))

    for frame in (0, 1):
        for k, field in enumerate(("a", "b")):
            stored = ds.read(frame, field, stored_order=True)
            assert stored.shape == (topology.cell_count, 1) and stored.dtype == np.float32
            for block in topology.blocks(stored):
                nz, ny, nx = block.data.shape
                centre = [lo + (np.arange(n) + 0.5) * (hi - lo) / n
                          for lo, hi, n in zip(block.world_lower, block.world_upper, (nx, ny, nz))]
                reference = scalar_field(centre[0][None, None, :], centre[1][None, :, None], centre[2][:, None, None],
                                         float(frame), seed=7 + k)
                ulp = np.spacing(reference.astype(np.float32)).astype(np.float64)
                assert (np.abs(block.data - reference) <= 0.5 * ulp + 1e-15).all()  # float32 rounding only


def test_refined_bricks_varied_more_than_every_unrefined_brick_of_their_level():
    topology = amr_topology(100_000, 3, seed=4, field_count=2)
    bricks = topology.bricks

    for level in range(topology.levels - 1):
        finer = bricks[bricks[:, 0] > level]
        ancestors = np.unique(finer[:, 1:4] // (BRICK << (finer[:, 0] - level))[:, None] * BRICK, axis=0)
        refined = np.column_stack([np.full(len(ancestors), level), ancestors, np.full((len(ancestors), 3), BRICK)])
        unrefined = bricks[bricks[:, 0] == level]
        varied = _reference_variation(refined, topology.spacing, [4, 5])
        kept = _reference_variation(unrefined, topology.spacing, [4, 5])
        assert varied.min() > kept.max()
        assert 0.1 < len(refined) / (len(refined) + len(unrefined)) < 0.5  # about PREFERRED_FRACTION


def test_single_cell_bricks_cut_the_level_boundaries():
    regular = amr_topology(100_000, 3, seed=3)
    ragged = amr_topology(100_000, 3, seed=3, single_cell_bricks=True)

    cells = ragged.brick_cells
    assert (regular.brick_cells == BRICK ** 3).all()
    assert (cells == 1).sum() > 0.15 * len(cells) and len(ragged.bricks) > 10 * len(regular.bricks)
    assert set(np.unique(ragged.bricks[cells == 1, 0])) == {0, 1}  # coarse cells left beside refined ones
    assert abs(ragged.cell_count - 100_000) <= 0.1 * 100_000


def test_the_seed_makes_it_reproducible(tmp_path):
    paths = [generate_amr(tmp_path / f"{name}.hrc", cells=30_000, levels=2, frames=2, seed=seed)
             for name, seed in (("a", 5), ("b", 5), ("c", 6))]
    a, b, c = (headrace.open(p) for p in paths)

    assert list(a.attributes["amr_bricks"]) == list(b.attributes["amr_bricks"])
    np.testing.assert_array_equal(a.read(1, stored_order=True), b.read(1, stored_order=True))
    assert not np.array_equal(a.read(1, stored_order=True), c.read(1, stored_order=True))


def test_cli_writes_and_summarises(tmp_path, capsys):
    import json

    output = tmp_path / "a.hrc"
    assert main(["generate", "amr", str(output), "--cells", "30000", "--levels", "2", "--frames", "2",
                 "--fields", "density,pressure", "--single-cell-bricks", "--seed", "3", "--codec", "zstd", "--json"]) == 0

    summary = json.loads(capsys.readouterr().out)
    topology = topology_of(headrace.open(output).attributes, str(output))
    assert (summary["bricks"], summary["cells"]) == (len(topology.bricks), topology.cell_count)
    assert "amr_bricks" not in summary["attributes"] and summary["attributes"]["single_cell_bricks"] == [1]
    assert [f["elements"] for f in summary["fields"]] == [2 * topology.cell_count] * 2


@pytest.mark.parametrize("words", [
    ["--cells", "2000", "--levels", "3", "--frames", "1"],  # fewer cells than three levels of bricks hold
    ["--cells", "3000", "--levels", "1", "--frames", "1"],  # no count within 10 %
    ["--cells", "30000", "--levels", "2", "--frames", "1", "--fields", "a,a"],
    ["--cells", "30000", "--levels", "9", "--frames", "1"],
    ["--cells", "30000", "--levels", "2", "--frames", "1", "--brick", "1"],
    ["--cells", "0", "--levels", "2", "--frames", "1"],
    ["--cells", "30000", "--levels", "2"],
])
def test_bad_options_are_one_line_usage_errors_and_write_nothing(tmp_path, capsys, words):
    assert main(["generate", "amr", str(tmp_path / "a.hrc"), *words]) == 2

    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert not list(tmp_path.iterdir())


def test_an_existing_output_needs_force(tmp_path, capsys):
    output = tmp_path / "a.hrc"
    output.write_bytes(b"keep")
    assert main(["generate", "amr", str(output), "--cells", "30000", "--levels", "2", "--frames", "1"]) == 2
    assert output.read_bytes() == b"keep"
    assert main(["generate", "amr", str(output), "--cells", "30000", "--levels", "2", "--frames", "1", "--force"]) == 0


def test_api_refuses_bad_sizes(tmp_path):
    for call in (lambda p: generate_amr(p, cells=30_000, levels=2, frames=0),
                 lambda p: generate_amr(p, cells=30_000, levels=2, frames=1, fields=()),
                 lambda p: generate_amr(p, cells=30_000, levels=0, frames=1)):
        with pytest.raises(errors.UsageError):
            call(tmp_path / "x.hrc")
    assert not list(tmp_path.iterdir())
