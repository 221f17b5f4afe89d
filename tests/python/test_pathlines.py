"""Pathlines (issue 40) from Python and the command line: paths against the unsteady analytic flows' closed
forms, the .vtp and .npz they are written as, the GPU against the CPU reference, and bad input refused in one
line with nothing written."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import headrace
from headrace import FieldSpec
from headrace.cli.main import main
from headrace.generate import generate_flow
from headrace.generate.flow import double_gyre_z, rotation_path
from headrace.workloads import streamlines


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    """A rotation whose rate swings with time (frames 0.05 apart, t 0 to 2) and the 3D double gyre (frames 0.1
    apart, t 0 to 4)."""
    folder = tmp_path_factory.mktemp("series")
    rotation = generate_flow(folder / "rotation.hrc", dims=(33, 33, 33), block=(8, 8, 8), frames=41, kind="rotation", dt=0.05)
    gyre = generate_flow(folder / "gyre.hrc", dims=(65, 33, 33), block=(16, 16, 16), frames=41, kind="double-gyre", dt=0.1)
    return rotation, gyre


SEEDS = np.array([[0.5, 0.0, -0.5], [0.2, 0.3, 0.0], [-0.4, 0.1, 0.3], [0.0, -0.6, -0.2]], np.float32)


def path_ends(result):
    return result.points[result.offsets[1:] - 1]


def test_paths_of_the_rotation_follow_its_closed_form(series):
    rotation, _ = series
    result = streamlines.trace_pathlines(rotation, SEEDS, step_size=0.01)
    assert result.ends == ["end_time"] * len(SEEDS)
    assert result.stats["intervals"] == 40 and result.stats["whole_frames"]
    for s, seed in enumerate(SEEDS):
        points = result.points[result.offsets[s]:result.offsets[s + 1]]
        times = result.times[result.offsets[s]:result.offsets[s + 1]]
        assert times[0] == 0.0 and times[-1] == 2.0 and np.all(np.diff(times) > 0)
        exact = rotation_path(seed[None].astype(np.float64), 0.0, times)[:, 0]
        # Linear in time between frames 0.05 apart: the rate's swing is off by at most dt^2 / 8 x |w''| a frame.
        assert np.abs(points - exact).max() < 2e-4
    np.testing.assert_array_equal(result.integration_times(), result.times)  # all released at t0 = 0


def test_the_double_gyres_rise_follows_its_closed_form_and_backward_returns(series):
    _, gyre = series
    seeds = np.array([[0.3, 0.4, 0.2], [1.2, 0.6, 0.5], [1.7, 0.2, 0.8]], np.float32)
    forward = streamlines.trace_pathlines(gyre, seeds, t0=0.5, t1=3.5, step_size=0.02)
    assert forward.stats["direction"] == "forward"
    ends = path_ends(forward)
    # z rises by sin(pi z), trilinear between points 1/32 apart: off by at most h^2 / 8 x pi^2 x 0.05 a time unit.
    exact = double_gyre_z(seeds[:, 2].astype(np.float64), 0.5, np.array([3.5]))[0]
    np.testing.assert_allclose(ends[:, 2], exact, atol=2e-4)
    back = streamlines.trace_pathlines(gyre, ends, t0=3.5, t1=0.5, step_size=0.02)
    assert back.stats["direction"] == "backward"
    assert np.all(back.integration_times() <= 0)
    np.testing.assert_allclose(path_ends(back), seeds, atol=2e-3)


def test_seeds_released_later_start_at_their_own_time(series):
    rotation, _ = series
    result = streamlines.trace_pathlines(rotation, SEEDS[:2], seed_times=[0.0, 1.23], step_size=0.01)
    np.testing.assert_allclose(result.seed_times, [0.0, 1.23])
    assert result.times[result.offsets[1]] == pytest.approx(1.23, abs=1e-7)
    assert result.integration_times()[result.offsets[2] - 1] == pytest.approx(2.0 - 1.23, abs=1e-7)


def test_a_cache_smaller_than_two_frames_loads_units_in_rounds_and_traces_the_same_paths(series):
    rotation, _ = series
    whole = streamlines.trace_pathlines(rotation, SEEDS, step_size=0.02, integrator="rk45", tolerance=1e-6)
    rounds = streamlines.trace_pathlines(rotation, SEEDS, step_size=0.02, integrator="rk45", tolerance=1e-6,
                                         cache_bytes=40 * 6144)
    assert not rounds.stats["whole_frames"] and rounds.stats["resident_evictions"] > 0
    for name in ("points", "velocities", "times", "offsets"):
        np.testing.assert_array_equal(getattr(whole, name), getattr(rounds, name))


def test_the_command_writes_paths_paraview_opens(series, tmp_path, capsys):
    rotation, _ = series
    vtp, npz = tmp_path / "paths.vtp", tmp_path / "paths.npz"
    assert main(["trace", str(rotation), "--pathlines", "--seeds", "uniform:27", "--step-size", "0.02",
                 "--out", str(vtp)]) == 0
    said = capsys.readouterr().out
    assert re.search(r"27 pathlines from t = 0 to 2, [\d,]+ points", said) and "27 end time" in said
    head = vtp.read_bytes()[:4000].decode(errors="replace")
    for name, kind in (("Time", "Float64"), ("IntegrationTime", "Float64"), ("Velocity", "Float32"),
                       ("Speed", "Float32"), ("SeedIds", "Int64"), ("ReleaseTime", "Float64"),
                       ("ReasonForTermination", "Int32")):
        assert f'type="{kind}" Name="{name}"' in head, name
    assert main(["trace", str(rotation), "--pathlines", "--seeds", "uniform:27", "--step-size", "0.02", "--t0", "1.5",
                 "--t1", "0.25", "--out", str(npz), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["direction"] == "backward" and stats["t0"] == 1.5 and stats["intervals"] == 25
    with np.load(npz) as paths:
        assert set(paths.files) >= {"points", "offsets", "Time", "IntegrationTime", "Velocity", "SeedIds", "ends"}
        assert paths["Time"][0] == 1.5 and paths["Time"][-1] == 0.25
        assert set(paths["ends"]) == {"end_time"}
        assert np.all(paths["ReasonForTermination"] == streamlines.TERMINATION_CODES["end_time"])


def test_bad_series_and_seeds_are_one_line_errors_and_nothing_is_written(series, tmp_path, capsys):
    rotation, _ = series
    unordered, reshaped = tmp_path / "unordered.hrc", tmp_path / "reshaped.hrc"
    frame = np.zeros((4 * 4 * 4, 3), np.float32)
    attributes = {"layout": "blocks", "grid_dims": [4, 4, 4], "block_dims": [4, 4, 4], "grid_origin": [0.0] * 3,
                  "grid_spacing": [1.0] * 3}
    for path, times, counts in ((unordered, (0.0, 1.0, 1.0), (64, 64, 64)), (reshaped, (0.0, 1.0, 2.0), (64, 64, 32))):
        with headrace.Writer(path, [FieldSpec("velocity", "float32", 3)]) as writer:
            for name, value in attributes.items():
                writer.set_attribute(name, value)
            for time, count in zip(times, counts):
                writer.write(writer.add_frame(time=time), "velocity", frame[:count])
    out = tmp_path / "paths.vtp"
    cases = [
        ([str(unordered)], "frame 2's time 1 is not after frame 1's 1"),
        ([str(reshaped)], "frame 2's velocity holds 32 points, frame 0's 64: a field that changes shape"),
        ([str(rotation), "--t0", "1", "--t1", "1"], "t0 and t1 are both 1"),
        ([str(rotation), "--t1", "7"], "t1 = 7 lies outside the frames' times [0, 2]"),
        ([str(rotation), "--direction", "backward"], "--direction backward: the paths run from --t0 to --t1"),
        ([str(rotation), "--frame", "3"], "--frame 3: the paths run through every frame"),
    ]
    for words, says in cases:
        seeds = ["--seeds", "rake:0.1,0.1,0.1:0.9,0.9,0.9:4"] if "hrc" in words[0] and "rotation" not in words[0] else \
            ["--seeds", "uniform:8"]
        assert main(["trace", *words, "--pathlines", *seeds, "--out", str(out)]) == 2, words
        err = capsys.readouterr().err
        assert says in err and len(err.strip().splitlines()) == 1, err
        assert not out.exists()
    outside = tmp_path / "outside.npy"
    np.save(outside, np.array([[5.0, 0.0, 0.0]], np.float32))
    assert main(["trace", str(rotation), "--pathlines", "--seeds", str(outside), "--out", str(out)]) == 2
    assert "seed 0 (5, 0, 0) lies outside the grid" in capsys.readouterr().err
    with pytest.raises(headrace.errors.UsageError, match=r"released at 3, outside \[0, 2\]"):
        streamlines.trace_pathlines(rotation, SEEDS[:1], seed_times=[3.0])
    assert not out.exists()


def test_without_a_gpu_the_pathline_tracer_says_why(series):
    if headrace._ext.gpu_count() > 0:
        pytest.skip("this machine has a GPU")
    with pytest.raises(headrace.errors.UnavailableError, match="GPU"):
        streamlines.trace_pathlines(series[0], SEEDS, step_size=0.05, device=0)


@pytest.mark.gpu
def test_gpu_pathlines_equal_the_cpu_reference_bit_for_bit(series):
    rotation, gyre = series
    seeds = np.random.default_rng(3).uniform(0.05, 0.95, (2000, 3)).astype(np.float32) * [2, 1, 1]
    for path, points, cache_bytes in ((gyre, seeds, 1 << 30), (gyre, seeds, 64 * 49152), (rotation, SEEDS, 1 << 30)):
        for integrator in ("rk4", "rk45"):
            options = dict(step_size=0.03, integrator=integrator, cache_bytes=cache_bytes)
            cpu = streamlines.trace_pathlines(path, points, device="cpu", **options)
            gpu = streamlines.trace_pathlines(path, points, device=0, **options)
            assert gpu.stats["device"] == 0 and gpu.ends == cpu.ends
            for name in ("points", "velocities", "times", "offsets"):
                np.testing.assert_array_equal(getattr(gpu, name), getattr(cpu, name), err_msg=f"{path} {integrator} {name}")


def test_streaklines_release_every_seed_again_and_each_particle_follows_its_own_path(series):
    rotation, _ = series
    assert np.allclose(streamlines.release_times(0.0, 1.0, 0.25), [0.0, 0.25, 0.5, 0.75, 1.0])
    assert np.allclose(streamlines.release_times(2.0, 1.5, 0.25), [2.0, 1.75, 1.5])
    seeds = SEEDS[:2]
    result = streamlines.trace_streaklines(rotation, seeds, release_every=10, step_size=0.01, t1=1.0)
    assert result.stats["releases"] == 11 and len(result.ends) == 22
    np.testing.assert_array_equal(result.seed_ids, np.repeat([0, 1], 11))
    at = streamlines.positions_at(result, 0.8)  # a frame's time: every particle released by then stands there
    owners = np.repeat(np.arange(22), np.diff(result.offsets))[at]
    assert len(at) == 2 * 9
    for point, particle in zip(at, owners):
        seed, release = seeds[result.seed_ids[particle]], result.seed_times[particle]
        exact = rotation_path(seed[None].astype(np.float64), release, np.array([0.8]))[0, 0]
        assert np.abs(result.points[point] - exact).max() < 2e-4


def test_the_command_writes_a_series_paraview_animates(series, tmp_path, capsys):
    rotation, _ = series
    pvd = tmp_path / "streaks.pvd"
    assert main(["trace", str(rotation), "--streaklines", "--seeds", "rake:0.2,0,0:0.6,0,0:3", "--step-size", "0.01",
                 "--release-every", "5", "--t1", "1", "--out", str(pvd)]) == 0
    assert "3 streaklines (63 particles, 21 releases a seed)" in capsys.readouterr().out
    listed = re.findall(r'timestep="([^"]+)" group="" part="0" file="([^"]+)"', pvd.read_text())
    assert [float(t) for t, _ in listed] == pytest.approx([0.05 * k for k in range(21)])
    half = (tmp_path / listed[10][1]).read_text(errors="replace")[:2000]  # t = 0.5: 3 streaks of 11 particles
    assert 'NumberOfPoints="33" NumberOfLines="3"' in half and 'Name="Age"' in half
    positions = tmp_path / "positions.pvd"
    assert main(["trace", str(rotation), "--pathlines", "--seeds", "uniform:8", "--step-size", "0.05",
                 "--out", str(positions)]) == 0
    first = re.findall(r'file="([^"]+)"', positions.read_text())[0]
    assert 'NumberOfPoints="8" NumberOfVerts="8"' in (tmp_path / first).read_text(errors="replace")[:600]
    for words, says in ((["--release-every", "3", "--pathlines"], "--release-every: how often --streaklines release"),
                        (["--pathlines", "--streaklines"], "one or the other"),
                        (["--release-every", "3"], "--release-every: for pathlines and streaklines"),
                        ([], "a .pvd series holds pathlines' or streaklines' particles")):
        out = tmp_path / "bad.pvd"
        assert main(["trace", str(rotation), "--seeds", "uniform:8", *words, "--out", str(out)]) == 2
        assert says in capsys.readouterr().err
        assert not out.exists() and not (tmp_path / "bad_pieces").exists()


def test_a_compressed_series_is_traced_whole_and_refused_in_rounds(series, tmp_path):
    rotation, _ = series
    packed = generate_flow(tmp_path / "packed.hrc", dims=(33, 33, 33), block=(8, 8, 8), frames=41, kind="rotation", dt=0.05,
                           codec="zstd")
    plain = streamlines.trace_pathlines(rotation, SEEDS, step_size=0.02)
    whole = streamlines.trace_pathlines(packed, SEEDS, step_size=0.02)
    assert whole.stats["whole_frames"]
    np.testing.assert_array_equal(whole.points, plain.points)
    with pytest.raises(headrace.errors.UsageError, match="whole blocks of uncompressed chunks"):
        streamlines.trace_pathlines(packed, SEEDS, step_size=0.02, cache_bytes=40 * 6144)


def test_the_lab_measures_pathlines_against_the_engine_each_pass_a_fresh_process(series, tmp_path):
    from headrace.bench.cases import pathlines as case

    _, gyre = series
    assert case.main([str(gyre), "--seeds", "64", "--step-size", "0.1", "--device", "cpu", "--rounds", "1",
                      "--out", str(tmp_path / "hot")]) == 0
    result = json.loads((tmp_path / "hot" / "pathlines.json").read_text())
    row = result["rows"][0]
    assert 40 <= row["seeds"] <= 90 and row["frames"] == 41 and row["ends"] == "end_time"
    assert row["steps"] == row["seeds"] * 40, "0.1 a step, one an interval"
    assert row["yardstick_s"] == max(row["bytes"] / 1e9 / row["engine_gbps"], row["advance_s"])
    assert row["trace_vs_yardstick"] == pytest.approx(row["trace_s"] / row["yardstick_s"])
    assert row["api_wall_s"] >= row["trace_s"] > 0 and row["cli_wall_s"] > 0 and row["fault_s"] >= 0
    # A cache of fewer bytes than two frames: units in rounds, the same steps.
    frame_bytes = 65 * 33 * 33 * 12
    assert case.main([str(gyre), "--seeds", "64", "--step-size", "0.1", "--device", "cpu", "--rounds", "1",
                      "--budget-cache", str(frame_bytes), "--out", str(tmp_path / "budget")]) == 0
    rows = (tmp_path / "budget" / "pathlines-budget.csv").read_text().splitlines()
    assert len(rows) == 3 and "False" in rows[2] and "True" in rows[1]
