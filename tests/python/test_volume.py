"""headrace.workloads.volume: the AMR and structured-volume renderer of seed 003 and its animation loop, on the CPU
reference (the GPU kernels run the same math: test_volume_gpu.py holds them to it)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import headrace
from headrace import amr
from headrace.imaging import value_range
from headrace.workloads.volume import STAGES, VolumeRenderer, transfer_function

SIZE = (24, 20, 16)  # x, y, z cells


def _field(t: float) -> np.ndarray:
    """(z, y, x) float32: a smooth blob that moves with t."""
    z, y, x = np.meshgrid(*(np.arange(n) + 0.5 for n in SIZE[::-1]), indexing="ij")
    centre = (SIZE[0] / 2 + 3 * np.sin(t), SIZE[1] / 2, SIZE[2] / 2)
    return np.exp(-((x - centre[0]) ** 2 + (y - centre[1]) ** 2 + (z - centre[2]) ** 2) / 30.0).astype(np.float32)


def _write_bricked(path, frames, bricks_of):
    """The grid of _field as level-0 bricks (x y z boxes of cells), flattened in brick order."""
    bricks = amr.bricks_array([(0, box) for box in bricks_of])
    topology = amr.AmrTopology(SIZE, (), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0), bricks)
    with headrace.Writer(path, [headrace.FieldSpec("density", "float32", 1)]) as w:
        for name, value in topology.attributes().items():
            w.set_attribute(name, value)
        for t in range(frames):
            grid = _field(t)
            f = w.add_frame(float(t))
            w.write(f, "density", np.concatenate([grid[lo[2]:hi[2], lo[1]:hi[1], lo[0]:hi[0]].reshape(-1)
                                                  for lo, hi in bricks_of]))
    return topology


def _eight_bricks():
    half = [s // 2 for s in SIZE]
    return [((x0, y0, z0), (x1, y1, z1)) for z0, z1 in ((0, half[2]), (half[2], SIZE[2]))
            for y0, y1 in ((0, half[1]), (half[1], SIZE[1])) for x0, x1 in ((0, half[0]), (half[0], SIZE[0]))]


@pytest.fixture(scope="module")
def volumes(tmp_path_factory):
    folder = tmp_path_factory.mktemp("volume")
    one = _write_bricked(folder / "one.hrc", 3, [((0, 0, 0), SIZE)])
    eight = _write_bricked(folder / "eight.hrc", 3, _eight_bricks())
    return folder / "one.hrc", folder / "eight.hrc", one, eight


def test_one_brick_or_eight_draw_the_same_volume(volumes):
    one, eight, *_ = volumes
    options = dict(width=96, height=72, value_range=(0.0, 1.0), camera="orbit:30,20")
    a = VolumeRenderer(one, **options).render(1)
    b = VolumeRenderer(eight, **options).render(1)
    assert a.shape == (72, 96, 4) and a.dtype == np.uint8
    drawn = a[..., :3].max(axis=2) > 0
    assert 0.05 < drawn.mean() < 0.9 and not drawn[0, 0]
    # Tent weights summed brick by brick round differently; nothing else differs.
    assert np.abs(a.astype(int) - b.astype(int)).max() <= 2


def test_value_ranges_bound_every_cell_whose_tent_reaches_a_region(volumes):
    _, eight, _, topology = volumes
    renderer = VolumeRenderer(eight, width=8, height=8)
    ds = headrace.open(eight)
    scalars = ds.read(2, "density", stored_order=True).reshape(-1)
    ranges = renderer.ranges(scalars)
    assert ranges.shape == (renderer.topology.region_count, 2)
    filled = ranges[:, 0] <= ranges[:, 1]
    assert filled.all()  # the grid covers the domain: every region has cells
    assert ranges[:, 0].min() == scalars.min() and ranges[:, 1].max() == scalars.max()
    # Every value the renderer can reconstruct is a blend of cells within a region's range: check the
    # range of the cells whose centres lie inside each region against it (a subset of those counted).
    grid = _field(2)
    assert np.isclose(ranges[:, 1].max(), grid.max())


def test_classification_follows_the_transfer_function(volumes):
    one, *_ = volumes
    ds = headrace.open(one)
    scalars = ds.read(0, "density", stored_order=True).reshape(-1)
    everything = VolumeRenderer(one, width=8, height=8, opacity="flat:0.5").visible(scalars)
    assert everything.all()
    high = VolumeRenderer(one, width=8, height=8, opacity="ramp:0.9,1,0.5", value_range=(0.0, 1.0))
    ranges, visible = high.ranges(scalars), high.visible(scalars)
    np.testing.assert_array_equal(visible.astype(bool), ranges[:, 1] >= 0.9 * 1.0 + 1.0 / 256 * 0)  # bins above 0.9
    iso = VolumeRenderer(one, width=8, height=8, mode="iso", iso=0.5)
    np.testing.assert_array_equal(iso.visible(scalars).astype(bool), (ranges[:, 0] <= 0.5) & (0.5 <= ranges[:, 1]))


def test_empty_space_skipping_does_not_change_the_image(volumes):
    one, *_ = volumes
    # A ramp that hides low values: its regions are skipped, yet the samples after them lie where an
    # unskipped ray takes them, so the image is the one drawn through every region.
    options = dict(width=64, height=48, opacity="ramp:0.9,1,0.3", value_range=(0.0, 1.0))
    skipping = VolumeRenderer(one, **options)
    scalars = headrace.open(one).read(0, "density", stored_order=True).reshape(-1)
    assert 0.02 < skipping.visible(scalars).mean() < 0.7
    everything = VolumeRenderer(one, skip_empty=False, **options)
    assert everything.visible(scalars).all()
    image = skipping.render(0)
    assert image[..., :3].max() > 50
    assert np.abs(image.astype(int) - everything.render(0).astype(int)).max() <= 1


@pytest.mark.parametrize("stages", STAGES)
def test_every_stage_shows_the_same_images(volumes, stages):
    one, *_ = volumes
    renderer = VolumeRenderer(one, width=48, height=36)
    expected = {f: renderer.image_of(headrace.open(one).read(f, "density", stored_order=True)) for f in range(3)}
    seen = {}
    run = renderer.play([2, 0, 1, 1], stages=stages, on_image=lambda f, image: seen.setdefault(f, image) is not None)
    assert [f["frame"] for f in run["frames"]] == [2, 0, 1, 1]
    for f in range(3):
        np.testing.assert_array_equal(seen[f], expected[f])
    assert run["stages"] == stages and run["enabled"][-1] == stages and run["fps"] > 0
    first = run["frames"][0]
    assert first["start"] == 0 and first["end"] > 0 and "render" in first["spans"] and "ranges" in first["spans"]
    assert ("flatten" in first["spans"]) == (STAGES.index(stages) < STAGES.index("flat"))
    for frame in run["frames"]:
        for spans in frame["spans"].values():
            assert all(0 <= s <= e for s, e in spans)
    assert run["frame_bytes"] == np.prod(SIZE) * 4 and run["stored_bytes"] == 4 * run["frame_bytes"]


def test_a_callback_that_returns_false_stops_the_run(volumes):
    one, *_ = volumes
    run = VolumeRenderer(one, width=16, height=12).play(range(3), stages="refit", on_image=lambda f, image: f < 1)
    assert [f["frame"] for f in run["frames"]] == [0, 1]


def test_the_value_range_comes_from_every_frame_of_the_index(volumes):
    one, *_ = volumes
    ds = headrace.open(one)
    lo, hi = value_range(ds, "density")
    everything = np.concatenate([ds.read(f, "density", stored_order=True).reshape(-1) for f in range(3)])
    assert (lo, hi) == (float(everything.min()), float(everything.max()))


def test_transfer_functions_and_their_errors():
    table = transfer_function("magma", "ramp:0.25,0.75,0.5")
    assert table.shape == (256, 4) and table.dtype == np.float32
    assert table[0, 3] == 0 and table[-1, 3] == pytest.approx(0.5) and 0 < table[128, 3] < 0.5
    assert (transfer_function("gray", "flat:0.2")[:, 3] == np.float32(0.2)).all()
    for bad in ("ramp:0.5,0.2,1", "ramp:0,1,0", "flat:2", "cone:1", "ramp:a,b,c"):
        with pytest.raises(headrace.UsageError, match="opacity"):
            transfer_function("viridis", bad)
    with pytest.raises(headrace.UsageError, match="colour map"):
        transfer_function("no-such-map")


def test_bad_topologies_are_refused_naming_the_file_and_brick(tmp_path):
    path = tmp_path / "overlap.hrc"
    bricks = [((0, 0, 0), (12, 20, 16)), ((10, 0, 0), (24, 20, 16))]  # x 10..12 twice
    with pytest.raises(headrace.UsageError, match=r"overlap.hrc: brick 0 .* and brick 1 .* overlap"):
        topology = amr.AmrTopology(SIZE, (), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0), amr.bricks_array([(0, b) for b in bricks]))
        with headrace.Writer(path, [headrace.FieldSpec("density", "float32", 1)]) as w:
            for name, value in topology.attributes().items():
                w.set_attribute(name, value)
            w.write(w.add_frame(0.0), "density", np.zeros(topology.cell_count, np.float32))
        VolumeRenderer(path)
    outside = amr.AmrTopology(SIZE, (), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0), amr.bricks_array([(0, ((0, 0, 0), (25, 20, 16)))]))
    with pytest.raises(headrace.UsageError, match="brick 0 .* outside the domain"):
        outside.validate("here")
    with pytest.raises(headrace.UsageError, match=r"bricks 0 .* and 1 .* overlap"):
        amr.AmrTopology(SIZE, (), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0),
                        amr.bricks_array([(0, b) for b in bricks])).check_overlaps("here")


def test_a_frame_of_another_size_is_refused(tmp_path):
    path = tmp_path / "ragged.hrc"
    topology = amr.AmrTopology(SIZE, (), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0), amr.bricks_array([(0, ((0, 0, 0), SIZE))]))
    with headrace.Writer(path, [headrace.FieldSpec("density", "float32", 1)]) as w:
        for name, value in topology.attributes().items():
            w.set_attribute(name, value)
        w.write(w.add_frame(0.0), "density", np.zeros(topology.cell_count, np.float32))
        w.write(w.add_frame(1.0), "density", np.zeros(topology.cell_count - 1, np.float32))
    with pytest.raises(headrace.BadDataError, match="frame 1 of field 'density' holds 7679 values where its topology has 7680"):
        VolumeRenderer(path)


def test_amr_levels_blend_across_the_level_boundary(tmp_path):
    """Two levels: the left half coarse, the right half refined by 2. The reconstruction is continuous, so a
    linear field (stored as cell averages) renders as a smooth ramp with no seam at the boundary."""
    path = tmp_path / "two-levels.hrc"
    coarse = (0, ((0, 0, 0), (8, 8, 8)))           # level 0 cells x 0..8 of 16
    fine = (1, ((16, 0, 0), (32, 16, 16)))         # level 1 cells x 16..32 = level 0 x 8..16
    bricks = amr.bricks_array([coarse, fine])
    topology = amr.AmrTopology((16, 8, 8), (2,), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0), bricks)
    values = []
    for level, (lo, hi) in (coarse, fine):
        h = 1.0 / 2 ** level
        z, y, x = np.meshgrid(*((np.arange(lo[a], hi[a]) + 0.5) * h for a in (2, 1, 0)), indexing="ij")
        values.append((x / 16.0).astype(np.float32).reshape(-1))
    with headrace.Writer(path, [headrace.FieldSpec("ramp", "float32", 1)]) as w:
        for name, value in topology.attributes().items():
            w.set_attribute(name, value)
        w.write(w.add_frame(0.0), "ramp", np.concatenate(values))
    renderer = VolumeRenderer(path, width=128, height=64, opacity="flat:1", value_range=(0.0, 1.0), tf="gray",
                              camera="lookat:8,4,-20:8,4,4", fov=30)
    image = renderer.render(0).astype(float)
    row = image[32, :, 0]
    drawn = row[row > 0][2:-2]  # the domain's edges: rays that graze its side faces
    steps = np.diff(drawn)
    steps = steps if steps.sum() > 0 else -steps  # the camera looks along +z: +x may be to the left
    assert drawn.size > 64 and steps.sum() > 50
    assert (steps >= -1).all()               # brightness grows along x: no jump back at the seam
    assert steps.max() <= 4 * np.median(np.abs(steps)) + 3  # and no jump forward either


@pytest.mark.parametrize("stages", ["baseline", "flat", "all"])
def test_a_frame_that_fails_to_load_stops_the_run_and_shows_no_stale_image(tmp_path, stages):
    path = tmp_path / "corrupt.hrc"
    _write_bricked(path, 3, [((0, 0, 0), SIZE)])
    table = headrace.open(path).container.chunk_table()
    offset = int(table["offset"][np.flatnonzero(table["frame"] == 1)[0]])
    with open(path, "r+b") as f:
        f.seek(offset + 100)
        byte = f.read(1)
        f.seek(offset + 100)
        f.write(bytes([byte[0] ^ 0xFF]))
    shown = []
    with pytest.raises(headrace.errors.ChecksumMismatchError, match=r"frame 1") as caught:
        VolumeRenderer(path, width=16, height=12).play([0, 1, 2], stages=stages,
                                                          on_image=lambda f, image: shown.append(f) is None)
    assert shown == [0]  # frame 0 shown; frame 1 never, and no later frame in its place
    assert str(path) in str(caught.value)


def test_the_dataset_opens_a_volume_renderer_and_the_cli_plays_and_renders(volumes, tmp_path, capsys):
    from headrace.cli.main import main

    one, eight, *_ = volumes
    with pytest.warns(DeprecationWarning, match="Dataset.volume is deprecated"):
        renderer = headrace.open(eight).volume(width=32, height=24)
    assert renderer.render(2).shape == (24, 32, 4)
    blocks = renderer.blocks(2)
    assert len(blocks) == 8 and blocks[0].level == 0 and blocks[0].lower == (0, 0, 0) and blocks[0].upper == (12, 10, 8)
    np.testing.assert_array_equal(blocks[7].data, _field(2)[8:, 10:, 12:])  # the last brick: the far corner
    assert blocks[7].world_upper == (24.0, 20.0, 16.0)
    assert main(["play", str(one), "--device", "cpu", "--stages", "baseline,all", "--width", "32", "--height", "24",
                 "--loops", "2", "--timeline", str(tmp_path / "t.png"), "--record", str(tmp_path / "t.json")]) == 0
    out = capsys.readouterr().out
    assert "baseline:" in out and "all:" in out and "| stages |" in out
    from headrace import timeline

    record = timeline.read_timeline(tmp_path / "t.json")
    assert [run["stages"] for run in record["runs"]] == ["baseline", "all"]
    assert all(run["frames_shown"] == 6 and run["render_only_fps"] > 0 for run in record["runs"])
    assert (tmp_path / "t.png").stat().st_size > 1000
    assert main(["render", str(eight), "--device", "cpu", "--frames", "0:3", "--out", str(tmp_path / "frames"),
                 "--width", "32", "--height", "24", "--mode", "iso", "--video", str(tmp_path / "v.gif")]) == 0
    assert sorted(p.name for p in (tmp_path / "frames").iterdir()) == [f"frame_{f:05d}.png" for f in range(3)]
    assert (tmp_path / "v.gif").exists()
    assert main(["render", str(eight), "--device", "cpu", "--frames", "0:3", "--out", str(tmp_path / "again"),
                 "--width", "32", "--height", "24", "--video", str(tmp_path / "v.mp4")]) == 0
    import imageio.v3 as iio

    assert iio.imread(tmp_path / "v.mp4").shape[0] == 3 and not list(tmp_path.glob("*.partial*"))
    assert main(["render", str(eight), "--device", "cpu", "--frame", "0", "--out", str(tmp_path / "x.png"),
                 "--segments", "2"]) == 2
    assert "particle options" in capsys.readouterr().err


def test_a_cold_play_counts_every_frame_from_its_start_and_says_when_it_is_mostly_start(volumes, tmp_path, capsys):
    """Cold: the file let go by this process's engines (locked pages would stay cached), evicted, and the
    rate over every frame from the run's start; too few frames for the frames loaded ahead are said."""
    from headrace.cli.main import main
    from headrace.engine import release_file, shared_engine

    one, *_ = volumes
    record = tmp_path / "cold.json"
    assert main(["play", str(one), "--device", "cpu", "--stages", "all,all", "--cache", "cold", "--width", "32",
                 "--height", "24", "--render-only", "0", "--record", str(record)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "a cold run of 3 frames with 3 loaded ahead is mostly its start: play at least 12 frames" in out
    runs = json.loads(record.read_text())["runs"]
    for run in runs:
        assert run["cache"] != "hot" and run["fps"] == run["fps_from_start"]
        assert run["fps_from_start"] == pytest.approx(run["frames_shown"] / run["frames"][-1]["end"])
    # The engine the runs streamed through holds the file open until a cold run's next eviction lets it go.
    engine = shared_engine("cpu", decode_on="cpu")
    engine.add_file(one)
    assert release_file(one) >= 1 and release_file(one) == 0
