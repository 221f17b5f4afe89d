"""headrace bench particles, algorithm 3, the sampling of the factor space, headrace tune and its profile."""

from __future__ import annotations

import csv
import json
import math

import pytest

import headrace
from headrace import tuning
from headrace.bench.cases import particles as study
from headrace.cli.main import main
from headrace.generate import generate_particles


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "p.hrc"
    generate_particles(path, particles=6000, frames=2, seed=1, chunk_size_bytes=16 << 10)  # about 512 to a chunk
    return path


def test_grid_and_sample_cover_the_space():
    space = tuning.Space(methods=("pread", "direct"), batches=(1000, 8000), segments=(2, 16), staging_bytes=(1 << 20,))
    assert len(list(tuning.grid(space))) == 2 * 2 * 2
    drawn = list(tuning.sample(space, 5, seed=3))
    assert len(drawn) == 5 and len({tuple(c.values()) for c in drawn}) == 5
    assert drawn == list(tuning.sample(space, 5, seed=3))  # seeded
    for c in drawn:
        assert c["method"] in space.methods and 1000 <= c["batch"] <= 8000 and c["segments"] in (2, 4, 8, 16)


class FakeRenderer:
    """Each frame takes `seconds`; counts the frames it drew."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.frames = seconds, []
        self.dataset = type("D", (), {"path": "/dev/null"})()

    def render(self, frame):
        import time

        time.sleep(self.seconds)
        self.frames.append(frame)
        return {"seconds": self.seconds, "draw_seconds": self.seconds / 2, "segment_waits": 1, "stored_bytes": 100,
                "particles": 10, "batches": 2, "h2d_seconds": self.seconds / 4}


def test_algorithm3_fills_the_wall_time_and_reports_the_papers_outputs():
    fake = FakeRenderer(0.01)
    result = study.algorithm3(fake, [0, 1, 2], cache="hot", prewarm=2, wall_seconds=0.1, gpu_iterations=3)
    assert 5 <= result.wall_frames <= 20  # about 0.1 s of 0.01 s frames
    row = result.row()
    assert row["frame_seconds"] == pytest.approx(0.01) and row["draw_median_s"] == pytest.approx(0.005)
    assert row["segment_waits_per_frame"] == 1 and row["stored_bytes_per_frame"] == 100
    assert row["h2d_s_per_frame"] == pytest.approx(0.0025)
    assert fake.frames[:4] == [0, 1, 2, 0]  # round robin


def test_tune_finds_the_grids_best_within_its_budget():
    space = tuning.Space(methods=("a", "b", "c"), batches=(1, 2, 4, 8), segments=(2, 4, 8, 16, 32), staging_bytes=(1, 2))

    def cost(c):  # one valley: method b, batch 4, segments 8, staging 2
        if c["method"] == "c" and c["batch"] == 8:
            raise headrace.Error("cannot run")
        return ({"a": 2.0, "b": 1.0, "c": 1.5}[c["method"]] + abs(math.log2(c["batch"]) - 2)
                + abs(math.log2(c["segments"]) - 3) + (2 - c["staging_bytes"]))

    ticks = iter(range(10**6))
    result = tuning.tune(cost, space, budget_seconds=60, seed=5, clock=lambda: next(ticks))
    best = min(cost(c) for c in tuning.grid(space) if not (c["method"] == "c" and c["batch"] == 8))
    assert result.best_seconds <= 1.05 * best
    assert len(result.evaluations) < len(list(tuning.grid(space)))  # found without measuring everything
    start = {"method": "b", "batch": 4, "segments": 8, "staging_bytes": 2}
    seeded = tuning.tune(cost, space, budget_seconds=1, seed=5, start_with=(start,), clock=lambda: next(ticks))
    assert seeded.evaluations[0] == {**start, "frame_seconds": 1.0} and seeded.best == start


def test_bench_particles_measures_resumes_and_plots(small, tmp_path, capsys):
    out, figure = tmp_path / "p.csv", tmp_path / "p.png"
    command = ["bench", "particles", str(small), "--device", "cpu", "--methods", "pread,mmap-batch",
               "--batches", "1000,3000", "--segments", "2", "--wall-seconds", "0.05", "--prewarm", "1",
               "--gpu-iterations", "2", "--width", "64", "--height", "48", "--overlap", "--out", str(out)]
    assert main([*command[:6], "pread,vram", *command[7:]]) == 2  # a method that needs a GPU, on the CPU
    assert "vram: needs a GPU" in capsys.readouterr().err and not out.exists()
    assert main(command) == 0
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 2 * 2 and {r["design"] for r in rows} == {"grid"}
    measured = [r for r in rows if not r.get("error")]
    assert {r["method"] for r in measured} == {"pread", "mmap-batch"} and len(measured) == 4
    for r in measured:
        assert float(r["frame_seconds"]) > 0 and float(r["draw_min_s"]) <= float(r["draw_median_s"]) <= float(r["draw_max_s"])
        assert int(r["particles_per_frame"]) == 6000 and int(r["machine_cores"]) >= 1
        assert float(r["stream_only_s"]) > 0 and float(r["overlap_frame_s"]) > 0 and float(r["overlap_ratio"]) > 0
    # Chunks of 512 (and 368 last): two chunks pass 1000, so each is a batch, but the last two share one.
    assert {r["batches_per_frame"] for r in measured if r["batch"] == "1000"} == {"11"}
    assert len(json.loads(out.with_suffix(".json").read_text())) == 4
    capsys.readouterr()
    assert main(command) == 0
    assert "4 of 4 configurations already" in " ".join(capsys.readouterr().out.split())
    assert main(["plot", str(out), "--out", str(figure)]) == 0
    assert figure.read_bytes()[:4] == b"\x89PNG"


def test_bench_particles_samples_the_space_and_says_so_in_each_row(small, tmp_path, capsys):
    out = tmp_path / "s.csv"
    command = ["bench", "particles", str(small), "--device", "cpu", "--sample", "3", "--seed", "2", "--methods",
               "pread,ram", "--batches", "1000,4000", "--segments", "2,8", "--staging", "16M", "--wall-seconds", "0.02",
               "--prewarm", "1", "--gpu-iterations", "1", "--width", "32", "--height", "24", "--out", str(out)]
    assert main(command) == 0
    rows = list(csv.DictReader(open(out)))
    assert len({(r["method"], r["batch"], r["segments"]) for r in rows}) == 3
    assert {r["design"] for r in rows} == {"sample of 3, seed 2"} and all(float(r["frame_seconds"]) > 0 for r in rows)
    assert all(1000 <= int(r["batch"]) <= 4000 and r["segments"] in ("2", "4", "8") for r in rows)
    capsys.readouterr()
    assert main(command) == 0  # the same seed draws the same configurations: all measured already
    assert "3 of 3 configurations already" in " ".join(capsys.readouterr().out.split())


def test_tune_stores_a_profile_that_render_uses(small, tmp_path, capsys):
    assert main(["tune", str(small), "--device", "cpu", "--budget", "3", "--methods", "pread,mmap-all",
                 "--batches", "1000,3000", "--segments", "2,4", "--staging", "16M", "--wall-seconds", "0.02",
                 "--width", "64", "--height", "48", "--compare-grid"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "tuned in" in said and "tuned / grid best" in said
    profile = tuning.load_profile("cpu", "none")
    assert profile["method"] in ("pread", "mmap-all") or profile["batch"] == 1 << 20
    assert main(["render", str(small), "--frame", "0", "--out", str(tmp_path / "f.png"), "--device", "cpu",
                 "--width", "32", "--height", "24"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "tuned profile" in said and f"{profile['method']} on the CPU" in said
    assert main(["tune", str(small), "--device", "cpu", "--methods", "pread,vram"]) == 2  # a baseline is no profile
    assert "vram cannot be tuned" in " ".join(capsys.readouterr().err.split())


@pytest.mark.gpu
def test_the_kvikio_peer_draws_the_same_frame(small):
    pytest.importorskip("kvikio")
    from headrace.workloads.particles import render_frame

    ds = headrace.open(small)
    peer = study.kvikio_renderer(ds, device=0, batch=1000, width=64, height=48)
    stats = peer.render(1)
    assert stats["particles"] == 6000 and stats["stored_bytes"] == 6000 * 32
    expected = render_frame(ds, 1, device="cpu", width=64, height=48)  # every frame has the unit box
    import numpy as np

    np.testing.assert_array_equal(peer.image(), expected)


def test_the_overlap_pairs_the_halves_frame_by_frame_and_one_slow_frame_does_not_move_it():
    class Paired:
        dataset = type("D", (), {"path": "/dev/null"})()

        def __init__(self) -> None:
            self.calls = []

        def render(self, frame, draw=True):
            self.calls.append((frame, draw))
            slow = len(self.calls) == 3  # the second pair's drawn frame is held up
            return {"seconds": (0.5 if slow else 0.011 if draw else 0.010)}

    renderer = Paired()
    drawn, alone = study.overlap_seconds(renderer, [0, 1], count=2, cache="hot")
    assert len(renderer.calls) == 14  # at least seven pairs
    assert renderer.calls[:4] == [(0, True), (0, False), (1, True), (1, False)]  # each frame drawn, then streamed alone
    assert drawn == pytest.approx(0.011) and alone == pytest.approx(0.010)


def test_a_series_passes_each_frame_the_next_one_and_is_hot_only():
    class Recorder(FakeRenderer):
        def __init__(self) -> None:
            super().__init__(0.0)
            self.asked = []

        def render(self, frame, draw=True, next_frame=None):
            self.asked.append((frame, draw, next_frame))
            return super().render(frame)

    fake = Recorder()
    study.algorithm3(fake, [0, 1, 2], cache="hot", prewarm=2, wall_seconds=0.0, gpu_iterations=2, series=True)
    assert [(f, n) for f, _, n in fake.asked] == [(f, (f + 1) % 3) for f, _, _ in fake.asked]  # round robin, one ahead
    fake.asked.clear()
    study.overlap_seconds(fake, [0, 1], count=1, cache="hot", least=2, series=True)
    # Each frame drawn loads itself ahead for its streaming-alone half, which loads the next frame.
    assert fake.asked == [(0, True, 0), (0, False, 1), (1, True, 1), (1, False, 0)]
    with pytest.raises(headrace.UsageError, match="hot only"):
        study.algorithm3(fake, [0], cache="cold", series=True)


def test_the_report_tabulates_figure_5_the_overlap_and_the_peer():
    from headrace.bench.particles_report import report

    def row(method, batch, frame_s, **extra):
        return {"file": "/d/p.hrc", "particles_per_frame": "1000000", "device": "0", "cache": "cold", "method": method,
                "batch": str(batch), "frame_seconds": str(frame_s), "segment_waits_per_frame": "2.0", **extra}

    rows = [row("vram", 128000, 0.010), row("pread", 128000, 0.040, stream_only_s="0.030"),
            row("pread", 128000, 0.050, stream_only_s="0.040"), row("uring-batched", 500000, 0.033, stream_only_s="0.031", overlap_frame_s="0.034"),
            row("vram", 500000, 0.009), row("kvikio", 500000, 0.045), {"method": "cufile", "error": "no /run/udev"}]
    text = report(rows)
    assert "| pread | 40.0 |  | 2.0 |" in text  # the best of its two rows
    assert "overlap: uring-batched at 500,000 per batch, 34.0 ms over max(vram 9.0 ms, streaming alone 31.0 ms) = **1.10**" in text
    assert "KvikIO / headrace = **1.36**" in text
    assert "cufile (no /run/udev)" in text


def test_the_report_sets_a_series_against_single_frames_streamed_alone():
    from headrace.bench.particles_report import report

    def row(method, series, frame_s, **extra):
        return {"file": "/d/p.hrc", "particles_per_frame": "1000000", "device": "0", "cache": "hot", "series": str(series),
                "method": method, "batch": "128000", "frame_seconds": str(frame_s), "segment_waits_per_frame": "0.0", **extra}

    rows = [row("vram", False, 0.0007), row("ram-pinned", False, 0.0014, stream_only_s="0.0010", overlap_frame_s="0.0014"),
            row("vram", True, 0.0007), row("ram-pinned", True, 0.0012, stream_only_s="0.0012", overlap_frame_s="0.0012")]
    single, series = report(rows).split("### ")[1:]
    assert "hot, series" in series and "against single frames" not in single
    assert "streaming alone 1.2 ms) = **1.00**" in series  # its own halves
    # Against the faster single frame streamed alone, the series' ratio is what the frames gained.
    assert ("the series' 1.2 ms over max(vram 0.7 ms, a single frame streamed alone 1.0 ms) = **1.20**; "
            "single frames streamed and drawn: best 1.4 ms (ram-pinned)") in series


def test_the_report_lists_a_samples_best_and_sets_it_against_the_grids():
    from headrace.bench.particles_report import report

    def row(method, batch, segments, frame_s, design="grid"):
        return {"file": "/d/p.hrc", "particles_per_frame": "1000000", "device": "0", "cache": "hot", "method": method,
                "batch": str(batch), "segments": str(segments), "staging_bytes": str(256 << 20), "design": design,
                "frame_seconds": str(frame_s), "segment_waits_per_frame": "0.0"}

    drawn = "sample of 3, seed 1"
    rows = [row("pread", 128000, 4, 0.010), row("pread", 128000, 64, 0.008), row("vram", 128000, 64, 0.001),
            row("ram", 237000, 8, 0.0088, drawn), row("pread", 611000, 2, 0.012, drawn), row("vram", 611000, 2, 0.0009, drawn)]
    grid, sample = report(rows).split("### ")[1:]
    assert "237,000" not in grid  # a sample's odd batch sizes stay out of the grid's table
    assert "hot, sample of 3, seed 1" in sample
    assert "| 1 | ram | 237,000 | 8 | 256 MiB | 8.8 |" in sample and "| 2 | pread | 611,000 | 2 | 256 MiB | 12.0 |" in sample
    assert ("the sample's best over the grid's best: 8.8 ms (2 configurations drawn) over 8.0 ms (pread, 128,000 per "
            "batch, 64 in flight; 2 configurations) = **1.10**") in sample


def test_the_plot_draws_frame_time_by_every_factor_that_varies_and_the_waits_by_the_batches_in_flight():
    from headrace.cli.plot import _particle_panels

    rows = [{"method": m, "batch": str(b), "segments": str(s), "staging_bytes": "1024", "frame_seconds": str(b * s / 10**9),
             "segment_waits_per_frame": str(64 / s)} for m in ("pread", "ram") for b in (1000, 4000) for s in (2, 16)]
    panels = list(_particle_panels(rows + [{"method": "cufile", "error": "no /run/udev"}]))
    assert [(title.split(" (")[0], x) for title, x, *_ in panels] == [
        ("frame time per method by particles per batch", "particles per batch"),
        ("frame time per method by batches in flight", "batches in flight"),
        ("waits for a free segment per frame, by batches in flight", "batches in flight")]
    assert not any(panel[6] for panel in panels)  # a grid's levels are joined by lines, a sample's are not
    assert all(panel[6] for panel in _particle_panels([{**r, "design": "sample of 8, seed 0"} for r in rows]))
    xs, ys = zip(*panels[1][3]["pread"])
    assert xs == (2.0, 16.0) and ys == pytest.approx((2e-6, 16e-6))  # the best over the batch sizes
    assert panels[2][3]["ram"] == [(2.0, 32.0), (16.0, 4.0)]


def test_the_report_compares_the_peer_like_for_like_and_sets_throughput_against_the_calls_yardsticks():
    from headrace.bench.particles_report import report

    def row(method, cache, frame_s, **extra):
        return {"file": "/d/p.hrc", "particles_per_frame": "1000000", "device": "0", "cache": cache, "method": method,
                "batch": "500000", "frame_seconds": str(frame_s), "segment_waits_per_frame": "0.0",
                "stored_bytes_per_frame": "32000000", **extra}

    rows = [row("ram-pinned", c, 0.002, h2d_s_per_frame="0.0016") for c in ("cold", "hot")]
    rows += [row("pread", "cold", 0.020), row("kvikio", "cold", 0.025), row("pread", "hot", 0.005), row("kvikio", "hot", 0.004)]
    ceiling = {"ceiling": {"gigabytes_per_second": 2.0}, "ceiling_line": "device ceiling: 2.00 GB/s (sequential)"}
    h2d = {"pinned_alloc": {"best_gbps": 50.0}, "pinned_file": {"whole": {"best_gbps": 40.0}}}
    text = report(rows, ceiling, h2d)
    cold, hot = text.split("### ")[1:]
    # The peer reads the file during the frame: it meets pread, not the file held in memory.
    assert "| ram-pinned (in memory) | 2.0 |" in cold and "a cold cache does not reach it" in cold
    assert "headrace's best 20.0 ms (pread, 500,000 per batch), KvikIO 25.0 ms: KvikIO / headrace = **1.25**" in cold
    assert "headrace's best in memory, ram-pinned: 2.0 ms" in cold
    assert "pread reads 1.60 GB/s of stored bytes, **0.80** x the probe's 2.00 GB/s" in cold
    assert "KvikIO / headrace = **0.80**" in hot  # the peer ahead is said as it is
    assert "ram-pinned delivers 16.0 GB/s, **0.40** x a page-locked file's 40.0 GB/s" in hot
    assert "the copy stream busy 1.6 ms of the 2.0 ms frame (20.0 GB/s while copying)" in hot
    assert "disk 2.00 GB/s (2.00 GB/s (sequential)); pinned H2D 50.0 GB/s, from the page-locked file 40.0 GB/s" in text


def test_bench_series_rows_say_so_and_a_cold_series_is_refused(small, tmp_path, capsys):
    out = tmp_path / "s.csv"
    command = ["bench", "particles", str(small), "--device", "cpu", "--methods", "pread", "--batches", "1000",
               "--segments", "4", "--wall-seconds", "0.02", "--prewarm", "1", "--gpu-iterations", "1", "--width", "32",
               "--height", "24", "--series", "--overlap", "--out", str(out)]
    assert main(command) == 0
    (row,) = csv.DictReader(open(out))
    assert row["series"] == "True" and float(row["frame_seconds"]) > 0 and float(row["overlap_ratio"]) > 0
    capsys.readouterr()
    assert main([*command[:-2], "--cache", "cold", "--out", str(tmp_path / "c.csv")]) != 0
    assert "use it hot" in capsys.readouterr().err
