"""Streamlines from Python and the command line: the four data-manager x layout combinations agree,
seeds, .npz and .vtp outputs, statistics, and bad input."""

from __future__ import annotations

import csv
import json
import pickle
import re

import numpy as np
import pytest

import headrace
from headrace.workloads import streamlines
from headrace.cli.main import main
from headrace.generate import generate_flow


@pytest.fixture(scope="module")
def flows(tmp_path_factory):
    folder = tmp_path_factory.mktemp("flow")
    blocks = generate_flow(folder / "blocks.hrc", dims=(32, 32, 32), block=(8, 8, 8), frames=1, seed=1)
    hilbert = folder / "hilbert.hrc"
    seconds = streamlines.convert_to_hilbert(blocks, hilbert, bits=3, chunk_pages=3)
    assert seconds > 0
    return blocks, hilbert


def test_every_layout_and_manager_trace_the_same_lines(flows):
    blocks, hilbert = flows
    seeds = streamlines.uniform_seeds(blocks, 27)
    assert seeds.shape == (27, 3) and seeds.dtype == np.float32
    runs = [streamlines.trace_run(path, seeds, steps=200, step_size=0.05, manager=manager, threads=8,
                                  cache_bytes=64 << 10, banks=2, unit_pages=3)
            for path in (blocks, hilbert) for manager in ("user", "mmap")]
    for run in runs[1:]:
        np.testing.assert_array_equal(run.offsets, runs[0].offsets)
        np.testing.assert_array_equal(run.points, runs[0].points)
    assert runs[0].offsets[0] == 0 and len(runs[0].offsets) == 28
    np.testing.assert_array_equal(runs[0].points[runs[0].offsets[:-1]], seeds)  # each line starts at its seed
    assert runs[0].stats["layout"] == "blocks" and runs[2].stats["layout"] == "hilbert"
    assert runs[0].stats["cache_evictions"] > 0  # 64 KiB of cache for 384 KiB of field
    assert all(end.endswith(("max_steps", "left_domain", "stagnant")) for end in runs[0].ends)
    centre = streamlines.rake_seeds((2.5, 2.5, 2.5), (3.5, 3.5, 3.5), 3)  # far from the domain's faces
    points, offsets = headrace.trace(blocks, centre, steps=10, step_size=0.05)
    assert points.shape == (33, 3) and list(offsets) == [0, 11, 22, 33]


def test_a_trace_without_a_manager_runs_the_resident_rounds_unless_the_user_caches_options_ask(flows):
    blocks, _ = flows
    seeds = streamlines.uniform_seeds(blocks, 27)
    options = dict(steps=200, step_size=0.05, threads=2, cache_bytes=64 << 10)
    default = streamlines.trace_run(blocks, seeds, **options)
    user = streamlines.trace_run(blocks, seeds, manager="user", **options)
    assert default.stats["manager"] == "resident" and default.stats["device"] == "cpu"
    np.testing.assert_array_equal(default.points, user.points)
    np.testing.assert_array_equal(default.offsets, user.offsets)
    assert streamlines.trace_run(blocks, seeds, banks=2, **options).stats["manager"] == "user"
    assert streamlines.trace_run(blocks, seeds, direct=True, **options).stats["manager"] == "user"


def test_the_gpu_tracers_rounds_trace_the_same_lines_on_cpu_threads(flows, tmp_path, capsys):
    blocks, hilbert = flows
    seeds = streamlines.uniform_seeds(blocks, 27)
    options = dict(steps=200, step_size=0.05, direction="both", cache_bytes=16 * 6144, unit_pages=3, threads=4)
    reference = streamlines.trace_run(blocks, seeds, manager="user", **options)
    for path in (blocks, hilbert):
        run = streamlines.trace_run(path, seeds, manager="resident", device="cpu", backend="posix", **options)
        np.testing.assert_array_equal(run.offsets, reference.offsets)
        np.testing.assert_array_equal(run.points, reference.points)
        assert run.stats["manager"] == "resident" and run.stats["device"] == "cpu"
        assert run.stats["resident_rounds"] > 1 and run.stats["resident_evictions"] > 0
        assert run.stats["bytes_read"] > 0
    out = tmp_path / "lines.npz"
    assert main(["trace", str(blocks), "--seeds", "uniform:27", "--steps", "200", "--step-size", "0.05",
                 "--direction", "both", "--manager", "resident", "--backend", "posix", "--cache-bytes", "96K",
                 "--out", str(out)]) == 0
    assert "resident cache: 16 units" in " ".join(capsys.readouterr().out.split())
    np.testing.assert_array_equal(np.load(out)["points"], reference.points)
    with pytest.raises(headrace.UsageError, match="resident manager"):
        streamlines.trace_run(blocks, seeds, manager="mmap", device=0, **options)
    with pytest.raises(headrace.UsageError, match="expected cpu or a GPU ordinal"):
        streamlines.trace_run(blocks, seeds, device="gpu", **options)


def test_without_a_gpu_the_gpu_tracer_says_why(flows):
    if headrace._ext.gpu_count() > 0:
        pytest.skip("a GPU is here")
    with pytest.raises(headrace.errors.UnavailableError, match="GPU"):
        streamlines.trace_run(flows[0], streamlines.uniform_seeds(flows[0], 8), steps=10, device=0)


@pytest.mark.gpu
def test_gpu_tracer_lines_equal_the_cpu_reference(flows):
    blocks, hilbert = flows
    seeds = streamlines.uniform_seeds(blocks, 512)
    for integrator in ("rk4", "rk45"):
        options = dict(steps=300, step_size=0.05, direction="both", cache_bytes=16 * 6144, unit_pages=3,
                       integrator=integrator)
        for path in (blocks, hilbert):
            cpu = streamlines.trace_run(path, seeds, manager="resident", device="cpu", **options)
            gpu = streamlines.trace_run(path, seeds, device=0, **options)
            assert gpu.stats["manager"] == "resident" and gpu.stats["device"] == 0
            np.testing.assert_array_equal(gpu.offsets, cpu.offsets)
            np.testing.assert_allclose(gpu.points, cpu.points, atol=1e-5)
            np.testing.assert_allclose(gpu.times, cpu.times, atol=1e-5)
            assert gpu.ends == cpu.ends


@pytest.mark.gpu
def test_the_gpu_samples_the_lines_velocities_as_the_file_gives_them(flows, tmp_path):
    blocks, hilbert = flows
    seeds = streamlines.uniform_seeds(blocks, 512)
    for path in (blocks, hilbert):
        gpu = streamlines.trace_run(path, seeds, steps=300, step_size=0.05, direction="both", device=0, unit_pages=3)
        assert gpu.pending is not None  # sampled by the tracer meanwhile, taken once
        velocities = gpu.velocities()
        assert gpu.pending is None and gpu.sampled is velocities and gpu.stats["velocity_seconds"] > 0
        mapped = headrace._ext.sample_flow(str(path), gpu.points, 0, 2)
        np.testing.assert_array_equal(velocities.view(np.uint32), mapped.view(np.uint32))  # NaN outside, the same bits
        small = streamlines.trace_run(path, seeds, steps=300, step_size=0.05, device=0, unit_pages=3, cache_bytes=16 * 6144)
        sent = pickle.loads(pickle.dumps(small))  # a rank's lines sent to rank 0 carry the velocities, not their sampling
        assert small.pending is None and sent.pending is None and small.sampled is not None
        mapped = headrace._ext.sample_flow(str(path), small.points, 0, 2)
        np.testing.assert_array_equal(small.sampled.view(np.uint32), mapped.view(np.uint32))  # out of core, in rounds
        np.testing.assert_array_equal(sent.sampled.view(np.uint32), mapped.view(np.uint32))
    written = streamlines.write_traced(tmp_path / "lines.npz", gpu)
    np.testing.assert_array_equal(np.load(written)["Velocity"].view(np.uint32), gpu.sampled.view(np.uint32))


@pytest.mark.parametrize("cache_bytes", [1 << 30, 16 * 6144])  # every block resident; 16 of the 64 blocks
def test_a_held_tracer_traces_again_and_gives_one_tracers_lines(flows, cache_bytes):
    blocks, _ = flows
    seeds = streamlines.uniform_seeds(blocks, 300)
    options = dict(steps=200, step_size=0.05, direction="both", threads=2)
    with streamlines.TraceSession(blocks, cache_bytes=cache_bytes, **options) as tracer:
        resident = cache_bytes > 64 * 6144
        assert tracer.setup["bytes_read"] == (64 * 6144 if resident else 0)  # read up front when they fit
        for part in (seeds, seeds[::3], seeds):
            held = tracer.trace(part)
            one = streamlines.trace_run(blocks, part, **options)
            np.testing.assert_array_equal(held.points, one.points)
            np.testing.assert_array_equal(held.offsets, one.offsets)
            np.testing.assert_array_equal(held.times, one.times)
            assert held.ends == one.ends and held.stats["seeds"] == len(part)
            if resident:
                assert held.stats["bytes_read"] == 0  # the blocks stayed in the cache between traces
        assert tracer.traces == 3
    with pytest.raises(ValueError, match="closed"):
        tracer.trace(seeds)


def test_a_held_tracer_needs_native_blocks(flows):
    _, hilbert = flows
    with pytest.raises(headrace.UsageError, match="native blocks"):
        streamlines.TraceSession(hilbert)


@pytest.mark.gpu
def test_a_held_gpu_tracer_gives_the_cpu_references_lines_without_reading_again(flows):
    blocks, _ = flows
    seeds = streamlines.uniform_seeds(blocks, 512)
    options = dict(steps=300, step_size=0.05, direction="both")
    with streamlines.TraceSession(blocks, device=0, **options) as gpu, streamlines.TraceSession(blocks, **options) as cpu:
        for part in (seeds, seeds[1::2]):
            on_gpu, on_cpu = gpu.trace(part), cpu.trace(part)
            assert on_gpu.stats["device"] == 0 and on_gpu.stats["bytes_read"] == 0
            np.testing.assert_array_equal(on_gpu.offsets, on_cpu.offsets)
            np.testing.assert_allclose(on_gpu.points, on_cpu.points, atol=1e-5)
            assert on_gpu.ends == on_cpu.ends


@pytest.mark.gpu
def test_gpu_tracer_takes_partial_blocks_and_partitions(tmp_path):
    """The kernel locates points with the CPU's layouts (units_along): partial units at the edges."""
    path = generate_flow(tmp_path / "odd.hrc", dims=(37, 23, 19), block=(8, 8, 8), frames=1, seed=5)
    hilbert = tmp_path / "odd-hilbert.hrc"
    streamlines.convert_to_hilbert(path, hilbert, bits=3, chunk_pages=3)
    seeds = streamlines.uniform_seeds(path, 256)
    for source in (path, hilbert):
        options = dict(steps=200, step_size=0.05, direction="both", cache_bytes=16 * 6144, unit_pages=3)
        cpu = streamlines.trace_run(source, seeds, manager="resident", device="cpu", **options)
        gpu = streamlines.trace_run(source, seeds, device=0, **options)
        np.testing.assert_array_equal(gpu.offsets, cpu.offsets)
        np.testing.assert_allclose(gpu.points, cpu.points, atol=1e-5)
        assert gpu.ends == cpu.ends and "left_domain" in "".join(cpu.ends)


def test_turbulent_streamlines_wander_across_many_blocks(tmp_path):
    path = generate_flow(tmp_path / "t.hrc", dims=(32, 32, 32), block=(8, 8, 8), seed=5, kind="turbulence")
    seeds = streamlines.rake_seeds((2.0, 3.0, 3.0), (4.0, 3.0, 3.0), 8)
    points, offsets = headrace.trace(path, seeds, steps=1500, step_size=0.02, manager="mmap")
    spacing = 2 * np.pi / 31
    blocks_visited = [len({tuple(b) for b in (points[a:e] / (8 * spacing)).astype(int)})
                      for a, e in zip(offsets[:-1], offsets[1:])]
    assert np.mean(blocks_visited) >= 4  # of 64 blocks; each line crosses several


def test_seeds_and_directions(flows):
    blocks, _ = flows
    rake = streamlines.rake_seeds((3, 3, 3), (2, 3, 4), 5)
    np.testing.assert_allclose(rake[[0, -1]], [[3, 3, 3], [2, 3, 4]])
    both = streamlines.trace_run(blocks, rake[:1], steps=10, step_size=0.05, direction="both")
    assert len(both.points) == 21
    np.testing.assert_array_equal(both.points[10], rake[0])  # the seed sits between the two halves
    with pytest.raises(headrace.UsageError, match=r"\(N, 3\)"):
        streamlines.trace(blocks, np.zeros((4, 2)))
    with pytest.raises(headrace.UsageError, match="rk4"):
        streamlines.trace(blocks, rake, integrator="euler")


def test_trace_command_writes_lines_and_statistics(flows, tmp_path, capsys):
    blocks, hilbert = flows
    out, stats = tmp_path / "lines.npz", tmp_path / "stats.csv"
    assert main(["trace", str(hilbert), "--seeds", "uniform:8", "--steps", "50", "--step-size", "0.05",
                 "--manager", "user", "--unit-pages", "3", "--banks", "2", "--direct", "--out", str(out),
                 "--stats", str(stats), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["seeds"] == 8 and summary["layout"] == "hilbert" and summary["cache_misses"] > 0
    # The command's time apart from the interpreter's start: the trace and the writing within it.
    assert 0 < summary["write_seconds"] and summary["seconds"] + summary["write_seconds"] <= summary["command_seconds"]
    saved = np.load(out)
    assert saved["points"].dtype == np.float32 and saved["offsets"].dtype == np.int64
    assert saved["offsets"][-1] == len(saved["points"]) == summary["points"]
    row = next(csv.DictReader(open(stats)))
    assert float(row["seconds"]) > 0 and row["direct"] == "True"

    seeds = tmp_path / "seeds.npy"
    np.save(seeds, streamlines.rake_seeds((1, 1, 1), (5, 5, 5), 4))
    vtp = tmp_path / "lines.vtp"
    assert main(["trace", str(blocks), "--seeds", str(seeds), "--steps", "20", "--step-size", "0.05",
                 "--manager", "mmap", "--out", str(vtp)]) == 0
    data = vtp.read_bytes()
    marker = b'<AppendedData encoding="raw">\n_'
    header = data[: data.index(marker)].decode()
    assert 'type="PolyData"' in header and 'NumberOfLines="4"' in header
    points = int(re.search(r'NumberOfPoints="(\d+)"', header).group(1))
    body = data[data.index(marker) + len(marker):]
    assert int(np.frombuffer(body[:8], np.uint64)[0]) == 12 * points  # the appended points block
    assert not list(tmp_path.glob("*.partial"))


def _lines(result):
    return [result.points[a:b] for a, b in zip(result.offsets[:-1], result.offsets[1:])]


@pytest.mark.parametrize("manager", ["user", "mmap", "resident"])
def test_a_stopped_trace_keeps_a_line_per_seed_and_marks_those_cut_short(flows, manager):
    blocks, _ = flows
    seeds = streamlines.uniform_seeds(blocks, 8000)
    # The resident tracer reports between rounds, at most every 0.1 s: a cache of 16 of the 64 blocks makes
    # many rounds (with every block resident, the lines may all end in one round longer than that).
    options = dict(steps=4000 if manager == "resident" else 400, step_size=0.01, manager=manager, device="cpu", threads=1,
                   unit_pages=3, **({"cache_bytes": 16 * 8**3 * 12} if manager == "resident" else {}))
    told = []

    def stop_at_once(ended, lines):
        told.append((ended, lines))
        return False

    stopped = streamlines.trace_run(blocks, seeds, progress=stop_at_once, **options)
    whole = streamlines.trace_run(blocks, seeds, **options)
    assert told and told[0][1] == len(seeds)  # forward only: one half-line a seed for the resident manager too
    assert len(stopped.ends) == len(seeds) and "stopped" not in "".join(whole.ends)
    cut = [i for i, end in enumerate(stopped.ends) if "stopped" in end]
    assert 0 < len(cut) < len(seeds)
    shorter = 0
    for i, (line, reference) in enumerate(zip(_lines(stopped), _lines(whole))):
        if i in cut:  # the points it had: the seed at least, a prefix of its whole line (all of it when the
            # resident tracer stopped it waiting for a block at its last point, whose next step left the domain)
            assert 1 <= len(line) <= len(reference)
            np.testing.assert_array_equal(line, reference[: len(line)])
            shorter += len(line) < len(reference)
        else:
            np.testing.assert_array_equal(line, reference)
    assert shorter > 0


def test_trace_budget_stops_the_command_and_says_so(flows, tmp_path, capsys):
    blocks, _ = flows
    out = tmp_path / "lines.npz"
    assert main(["trace", str(blocks), "--seeds", "uniform:20000", "--steps", "400", "--threads", "1",
                 "--budget", "0.01", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert re.search(r"budget of 0.01 s spent: \d[\d,]* of 1[\d,]+ lines ended; the other [\d,]+ end where they were", said)
    saved = np.load(out)
    assert len(saved["offsets"]) - 1 == len(saved["ends"]) and any("stopped" in end for end in saved["ends"])


def test_feature_seeds_follow_the_vorticity(flows, tmp_path, capsys):
    blocks, hilbert = flows
    strong = streamlines.feature_seeds(blocks, 2.0)
    band = streamlines.feature_seeds(hilbert, 1.0, 2.0, stride=2)
    assert len(strong) > 0 and len(band) > 0 and strong.dtype == np.float32
    assert len(streamlines.feature_seeds(blocks, 1.0, 2.0, stride=2)) == len(band)  # either layout
    assert len(streamlines.feature_seeds(blocks, 0.0)) == 30**3  # every interior point
    out = tmp_path / "f.npz"
    assert main(["trace", str(blocks), "--seeds", "feature:2.5", "--seed-stride", "3", "--steps", "20",
                 "--step-size", "0.05", "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["seeds"] == len(streamlines.feature_seeds(blocks, 2.5, stride=3))
    assert main(["trace", str(blocks), "--seeds", "feature:1000", "--out", str(tmp_path / "g.npz")]) == 2
    assert "no grid point" in capsys.readouterr().err


def test_trace_command_refuses_bad_input(flows, tmp_path, capsys):
    blocks, _ = flows
    assert main(["trace", str(blocks), "--seeds", "everywhere", "--out", str(tmp_path / "a.npz")]) == 2
    assert "expected uniform:N" in capsys.readouterr().err
    assert main(["trace", str(blocks), "--seeds", "uniform:8", "--out", str(tmp_path / "a.txt")]) == 2
    assert main(["trace", str(blocks), "--seeds", "rake:1,2:3,4,5:2", "--out", str(tmp_path / "a.npz")]) == 2
    assert not list(tmp_path.iterdir())


def test_convert_command_builds_the_hilbert_layout(flows, tmp_path, capsys):
    blocks, _ = flows
    out = tmp_path / "h.hrc"
    assert main(["convert", str(blocks), str(out), "--layout", "hilbert", "--hilbert-bits", "4", "--chunk-pages", "6",
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["layout"] == "hilbert" and summary["seconds"] > 0
    ds = headrace.open(out)
    assert ds.attributes["layout"] == "hilbert" and list(ds.attributes["hilbert_bits"]) == [4]
    assert main(["convert", str(blocks), str(tmp_path / "bad.hrc"), "--layout", "hilbert", "--hilbert-bits", "6"]) == 2
    assert not (tmp_path / "bad.hrc").exists()


def test_bench_studies_run_resume_and_plot(flows, tmp_path, capsys):
    from headrace.bench.cases.streamlines import STUDIES, Setup, configurations

    blocks, hilbert = flows
    out, figure = tmp_path / "scaling.csv", tmp_path / "scaling.png"
    command = ["bench", "streamlines", str(blocks), str(hilbert), "--study", "scaling", "--threads", "1,2",
               "--seeds", "uniform:8", "--steps", "30", "--step-size", "0.05", "--cache-bytes", "64K", "--unit-pages", "3",
               "--out", str(out)]
    assert main(command) == 0
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 4 * 2 * 2  # four implementations x two thread counts x strong and weak
    assert {r["implementation"] for r in rows} == {"native-user", "native-mmap", "hilbert-user", "hilbert-mmap"}
    assert {r["seeds"] for r in rows if r["scaling"] == "weak"} == {"8", "16"}  # weak: seeds grow with threads
    assert all(r["cache"] == "cold" and float(r["seconds_min"]) > 0 for r in rows)
    assert all(int(r["cache_misses"]) > 0 for r in rows if r["implementation"].endswith("user"))
    capsys.readouterr()
    assert main(command) == 0  # nothing left to measure: every point is in the file
    assert "16 of 16 points already" in capsys.readouterr().out
    assert len(list(csv.DictReader(open(out)))) == 16
    assert main(["plot", str(out), "--out", str(figure)]) == 0
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    setup = Setup(native=str(blocks), hilbert=str(hilbert), seeds=np.zeros((1, 3)), steps=1, step_size=0.1,
                  cache_bytes=1 << 20, threads=(1, 64), chunk_pages=(3, 96))
    weak_only = Setup(native=str(blocks), hilbert=str(hilbert), seeds=np.zeros((1, 3)), steps=1, step_size=0.1,
                      cache_bytes=1 << 20, threads=(1, 2), scalings=("weak",))
    assert {p["scaling"] for p in configurations("scaling", weak_only)} == {"weak"}
    for study in STUDIES:  # every study has points, none twice
        points = [tuple(sorted(p.items())) for p in configurations(study, setup)]
        assert points and len(points) == len(set(points)), study
    assert main(["plot", str(tmp_path / "missing.csv"), "--out", str(figure)]) == 2


@pytest.mark.parametrize("study, axis, levels", [("io", "direct", {"False", "True"}), ("banks", "banks", {"1", "2", "4", "8", "16", "32"}),
                                                  ("madvise", "madvise_interval_s", {"0.0", "1.0", "4.0", "16.0"}),
                                                  ("concurrency", "implementation", {"hilbert-user", "hilbert-mmap"})])
def test_every_study_of_seed_002_runs_end_to_end(flows, tmp_path, study, axis, levels):
    blocks, hilbert = flows
    out = tmp_path / f"{study}.csv"
    assert main(["bench", "streamlines", str(blocks), str(hilbert), "--study", study, "--threads", "1,2", "--seeds",
                 "uniform:8", "--steps", "30", "--step-size", "0.05", "--cache-bytes", "16M", "--chunk-pages", "3,6",
                 "--out", str(out)]) == 0
    rows = list(csv.DictReader(open(out)))
    assert {r[axis] for r in rows} == levels
    assert all(int(r["points"]) > 0 and float(r["seconds_min"]) > 0 for r in rows)
    assert all(int(r["cache_misses"]) > 0 for r in rows if r["manager"] == "user")
    assert all(r["memory_budget_bytes"] == str(16 << 20) for r in rows if r["manager"] == "mmap")  # out of core too
    assert main(["plot", str(out), "--out", str(tmp_path / f"{study}.png")]) == 0


def test_a_bov_brick_becomes_both_layouts_and_traces_alike(tmp_path, capsys):
    from headrace.generate.flow import abc_velocity

    n = 16
    axis = np.arange(n) * (2 * np.pi / (n - 1))
    grid = abc_velocity(axis[None, None, :], axis[None, :, None], axis[:, None, None], 0.0, seed=2)  # (z, y, x, 3)
    (tmp_path / "v.dat").write_bytes(grid.astype("<f4").tobytes())
    (tmp_path / "v.bov").write_text(f"DATA_FILE: v.dat\nDATA_SIZE: {n} {n} {n}\nDATA_FORMAT: FLOAT\nVARIABLE: velocity\n"
                                    f"DATA_COMPONENTS: 3\nBRICK_ORIGIN: 0 0 0\nBRICK_SIZE: {2 * np.pi} {2 * np.pi} {2 * np.pi}\n")
    linear = tmp_path / "linear.hrc"
    assert main(["convert", str(tmp_path / "v.bov"), str(linear), "--json"]) == 0
    blocks, hilbert = tmp_path / "b.hrc", tmp_path / "h.hrc"
    assert main(["convert", str(linear), str(blocks), "--layout", "blocks", "--block", "4", "4", "4", "--json"]) == 0
    assert main(["convert", str(linear), str(hilbert), "--layout", "hilbert", "--hilbert-bits", "2", "--chunk-pages", "3",
                 "--json"]) == 0
    capsys.readouterr()
    seeds = streamlines.rake_seeds((2.5, 2.5, 2.5), (3.5, 3.5, 3.5), 6)
    lines = [headrace.trace(path, seeds, steps=40, step_size=0.02, manager=manager, cache_bytes=2 * 12288, unit_pages=3)
             for path in (blocks, hilbert) for manager in ("user", "mmap")]
    for points, offsets in lines[1:]:
        np.testing.assert_array_equal(offsets, lines[0][1])
        np.testing.assert_array_equal(points, lines[0][0])
    assert main(["convert", str(blocks), str(tmp_path / "x.hrc"), "--layout", "blocks", "--block", "2", "2", "2"]) == 2
    assert main(["convert", str(linear), str(tmp_path / "y.hrc"), "--layout", "blocks", "--block", "99", "4", "4"]) == 2
    assert not (tmp_path / "x.hrc").exists() and not (tmp_path / "y.hrc").exists()


def test_a_flow_file_of_any_grid_traces_in_one_command_and_every_layout_gives_its_lines(tmp_path, capsys):
    """A user's velocity field as .npy on a grid no block size divides (37 x 23 x 19): `trace` takes it
    directly (blocks made on the fly, said so), and native blocks or Hilbert partitions with partial
    units at the edges, under every manager, trace the same lines."""
    nz, ny, nx = 19, 23, 37
    z, y, x = np.meshgrid(np.arange(nz) * 0.25, np.arange(ny) * 0.25, np.arange(nx) * 0.25, indexing="ij")
    velocity = np.stack([-(y - 2.75) + 0.1 * np.sin(z), x - 4.5, 0.2 * np.cos(x * y)], axis=-1).astype(np.float32)
    source = tmp_path / "velocity.npy"
    np.save(source, velocity)
    options = ["--seeds", "uniform:64", "--steps", "200", "--step-size", "0.05"]
    assert main(["trace", str(source), *options, "--out", str(tmp_path / "direct.npz")]) == 0
    said = capsys.readouterr().err  # a choice made for the user: on stderr
    assert "a flow field in grid order, traced through native blocks of 32x23x19 points" in said  # none past the grid
    reference = np.load(tmp_path / "direct.npz")

    grid = tmp_path / "grid.hrc"
    assert main(["convert", str(source), str(grid), "--components", "3"]) == 0  # (Z, Y, X, 3), not 19 frames
    layouts = {"blocks": ["--layout", "blocks", "--block", "8", "8", "8"],
               "hilbert": ["--layout", "hilbert", "--hilbert-bits", "3", "--chunk-pages", "3"]}
    for name, arguments in layouts.items():
        assert main(["convert", str(grid), str(tmp_path / f"{name}.hrc"), *arguments]) == 0
        for manager in ("user", "mmap", "resident"):
            out = tmp_path / f"{name}-{manager}.npz"
            assert main(["trace", str(tmp_path / f"{name}.hrc"), *options, "--manager", manager,
                         "--unit-pages", "3", "--cache-bytes", "256K", "--out", str(out)]) == 0
            lines = np.load(out)
            np.testing.assert_array_equal(lines["offsets"], reference["offsets"], err_msg=f"{name} {manager}")
            np.testing.assert_array_equal(lines["points"], reference["points"], err_msg=f"{name} {manager}")
    assert "left_domain" in "".join(reference["ends"])  # lines reach the partial units at the far edges
    capsys.readouterr()
    assert main(["trace", str(grid), *options, "--out", str(tmp_path / "from-grid.npz")]) == 0  # a grid-order container
    np.testing.assert_array_equal(np.load(tmp_path / "from-grid.npz")["points"], reference["points"])


def test_generate_flow_takes_any_grid_in_partial_blocks(tmp_path):
    path = generate_flow(tmp_path / "odd.hrc", dims=(21, 14, 9), block=(8, 8, 8), frames=1, seed=2)
    ds = headrace.open(path)
    assert ds.element_count(0, "velocity") == 3 * 2 * 2 * 512  # whole blocks, the edges' padded
    seeds = streamlines.uniform_seeds(path, 27)
    whole = streamlines.trace_run(path, seeds, steps=100, step_size=0.05, manager="user", cache_bytes=1 << 20)
    small = streamlines.trace_run(path, seeds, steps=100, step_size=0.05, manager="mmap")
    np.testing.assert_array_equal(whole.points, small.points)


@pytest.mark.parametrize("direction, integrator", [("forward", "rk4"), ("both", "rk45"), ("backward", "rk4")])
def test_lines_carry_what_paraviews_stream_tracer_gives(flows, tmp_path, direction, integrator):
    """Per point the integration time, the sampled vectors and their magnitude; per line the seed id and
    why it ended (ParaView's codes): in the .vtp, read back with VTK, and in the .npz."""
    vtk = pytest.importorskip("vtk")
    from vtk.util.numpy_support import vtk_to_numpy

    blocks, _ = flows
    seeds = streamlines.uniform_seeds(blocks, 27)
    result = streamlines.trace_run(blocks, seeds, steps=60, step_size=0.05, integrator=integrator, direction=direction)
    vtp, npz = tmp_path / "lines.vtp", tmp_path / "lines.npz"
    streamlines.write_traced(vtp, result)
    streamlines.write_traced(npz, result)
    reader = vtk.vtkXMLPolyDataReader()
    reader.SetFileName(str(vtp))
    reader.Update()
    polydata = reader.GetOutput()
    assert polydata.GetNumberOfLines() == len(seeds) and polydata.GetNumberOfPoints() == len(result.points)
    point_data, cell_data = polydata.GetPointData(), polydata.GetCellData()
    times = vtk_to_numpy(point_data.GetArray("IntegrationTime"))
    velocity = vtk_to_numpy(point_data.GetVectors())
    np.testing.assert_array_equal(times, result.times)
    np.testing.assert_array_equal(velocity, result.velocities())
    np.testing.assert_allclose(vtk_to_numpy(point_data.GetArray("Speed")), np.linalg.norm(velocity, axis=1), rtol=1e-6)
    np.testing.assert_array_equal(vtk_to_numpy(cell_data.GetArray("SeedIds")), np.arange(len(seeds)))
    saved = np.load(npz)
    np.testing.assert_array_equal(saved["IntegrationTime"], times)
    np.testing.assert_array_equal(saved["Velocity"], velocity)
    np.testing.assert_array_equal(saved["Speed"], np.linalg.norm(velocity, axis=1).astype(np.float32))
    np.testing.assert_array_equal(saved["points"], result.points)
    np.testing.assert_array_equal(saved["offsets"], result.offsets)
    assert list(saved["ends"]) == result.ends
    for line, (start, end) in enumerate(zip(result.offsets[:-1], result.offsets[1:])):
        backward_end, forward_end = result.ends[line].split("/")
        seed_at = start + (np.flatnonzero(times[start:end] == 0)[0] if direction != "forward" else 0)
        np.testing.assert_array_equal(result.points[seed_at], seeds[line])
        line_times = times[start:end]
        assert (np.diff(line_times) > 0).all()  # time grows along the line, from the backward end
        if integrator == "rk4":  # fixed steps: the k-th point past the seed at k steps
            np.testing.assert_allclose(line_times, (np.arange(end - start) - (seed_at - start)) * 0.05, rtol=1e-5, atol=1e-6)
        reason = vtk_to_numpy(cell_data.GetArray("ReasonForTermination"))[line]
        assert reason == streamlines.TERMINATION_CODES[backward_end if direction == "backward" else forward_end]
        if direction == "both":
            assert vtk_to_numpy(cell_data.GetArray("BackwardReasonForTermination"))[line] == \
                streamlines.TERMINATION_CODES[backward_end]
    assert np.isfinite(velocity).all()  # every point a line reached lies in the grid
    rounds = streamlines.trace_run(blocks, seeds, steps=60, step_size=0.05, integrator=integrator, direction=direction,
                                   manager="resident", device="cpu", cache_bytes=1 << 20)
    np.testing.assert_array_equal(rounds.points, result.points)  # the GPU tracer's rounds keep the same times
    np.testing.assert_array_equal(rounds.times, result.times)


def test_a_trace_whose_velocities_cannot_be_sampled_leaves_no_file(flows, tmp_path):
    """The velocities are sampled while the lines are written: a sampling that fails fails the write whole."""
    blocks, _ = flows
    result = streamlines.trace_run(blocks, streamlines.uniform_seeds(blocks, 8), steps=20, step_size=0.05)
    result.stats["file"] = str(tmp_path / "gone.hrc")
    for name in ("lines.npz", "lines.vtp"):
        with pytest.raises(headrace.Error):
            streamlines.write_traced(tmp_path / name, result)
        assert sorted(p.name for p in tmp_path.iterdir()) == []
