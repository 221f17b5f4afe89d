"""The workload commands (stream, trace, render, bench, tune, demo) refuse what cannot run before the
work, with one line and the right exit status; say where they ran and how the page cache was emptied;
stop at --budget keeping what was measured; and leave no half-written file behind (issue 16)."""

from __future__ import annotations

import csv
import inspect
import json

import numpy as np
import pytest

import headrace
from headrace.workloads import streamlines
from headrace.cli.main import main
from headrace.generate import generate_flow, generate_particles


@pytest.fixture(scope="module")
def particle_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("workload") / "p.hrc"
    generate_particles(path, particles=6000, frames=3, seed=1, chunk_size_bytes=16 << 10)
    return path


@pytest.fixture(scope="module")
def flows(tmp_path_factory):
    folder = tmp_path_factory.mktemp("flow")
    blocks = generate_flow(folder / "blocks.hrc", dims=(16, 16, 16), block=(8, 8, 8), frames=1, seed=1)
    hilbert = folder / "hilbert.hrc"
    streamlines.convert_to_hilbert(blocks, hilbert, bits=3, chunk_pages=3)
    return blocks, hilbert


def one_line(err: str) -> str:
    """The single line a refused command prints (no traceback, no usage block)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def nothing_partial(folder) -> bool:
    return not list(folder.rglob("*.partial"))


SMALL_RENDER = ["--wall-seconds", "0.02", "--width", "32", "--height", "24"]


def bench_particles(path, out, *extra: str) -> list[str]:
    return ["bench", "particles", str(path), "--device", "cpu", "--methods", "pread", "--batches", "1000,3000",
            "--segments", "2", "--prewarm", "1", "--gpu-iterations", "1", *SMALL_RENDER, "--out", str(out), *extra]


# ---- --device: Device() everywhere, through choose_device ----

@pytest.mark.parametrize("command", [["stream", "{p}"], ["render", "{p}", "--frame", "0", "--out", "{t}/f.png"],
                                     ["trace", "{f}", "--seeds", "uniform:8", "--out", "{t}/l.npz"],
                                     ["bench", "particles", "{p}", "--out", "{t}/b.csv"], ["tune", "{p}"]])
def test_a_device_that_is_no_word_of_the_type_is_a_usage_error(particle_file, flows, tmp_path, capsys, command):
    words = [w.format(p=particle_file, f=flows[0], t=tmp_path) for w in command]
    assert main([*words, "--device", "gpu"]) == 2
    line = one_line(capsys.readouterr().err)
    assert "--device" in line and "cpu or a GPU number" in line
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("command, instead", [
    (["stream", "{p}", "--json"], "host memory instead"),
    (["trace", "{f}", "--seeds", "uniform:8", "--steps", "10", "--out", "{t}/l.npz", "--json"], "tracing on the CPU instead"),
    (["render", "{p}", "--frame", "0", "--out", "{t}/f.png", "--width", "32", "--height", "24"], "the CPU reference renderer"),
])
def test_a_gpu_asked_for_where_there_is_none_runs_on_the_cpu_and_says_so_once(particle_file, flows, tmp_path, capsys,
                                                                           command, instead):
    if headrace._ext.gpu_count() > 0:
        pytest.skip("a GPU is here: GPU 0 runs it")
    words = [w.format(p=particle_file, f=flows[0], t=tmp_path) for w in command]
    assert main([*words, "--device", "0"]) == 0
    line = one_line(capsys.readouterr().err)
    assert line.startswith("headrace: no GPU 0") and instead in line and "--device cpu" in line
    assert "device='cpu'" not in line  # said in the command's words, not Python's


def test_the_cli_and_python_stream_with_the_same_prefetch():
    from headrace.cli.main import build_parser
    from headrace.dataset import Dataset
    from headrace.stream import FrameStream

    stream = build_parser()._subparsers._group_actions[0].choices["stream"]
    cli = next(a.default for a in stream._actions if a.dest == "prefetch")
    assert cli == inspect.signature(Dataset.stream).parameters["prefetch"].default
    assert cli == inspect.signature(FrameStream.__init__).parameters["prefetch"].default


# ---- stream ----

def test_stream_prefetch_is_bounded_and_never_more_slots_than_frames(particle_file, capsys):
    assert main(["stream", str(particle_file), "--device", "cpu", "--prefetch", "99999999999999999999"]) == 2
    assert "--prefetch" in one_line(capsys.readouterr().err)
    assert main(["stream", str(particle_file), "--device", "cpu", "--prefetch", "64", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["frames"] == 3 and summary["configuration"].endswith("prefetch=3")


@pytest.mark.parametrize("where", ["folder", "under a file", "missing folder"])
def test_stream_csv_that_cannot_be_written_is_refused_before_streaming(particle_file, tmp_path, capsys, where):
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    target = {"folder": tmp_path / "folder", "under a file": tmp_path / "file" / "x.csv",
              "missing folder": tmp_path / "missing" / "x.csv"}[where]
    assert main(["stream", str(particle_file), "--device", "cpu", "--csv", str(target)]) == 2
    assert "--csv" in one_line(capsys.readouterr().err)
    assert capsys.readouterr().out == "" and nothing_partial(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "folder"] and not list((tmp_path / "folder").iterdir())


def test_stream_writes_its_csv_and_says_its_sums_are_over_concurrent_reads(particle_file, tmp_path, capsys):
    out = tmp_path / "frames.csv"
    assert main(["stream", str(particle_file), "--device", "cpu", "--loop", "2", "--stats", "--csv", str(out)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "6 frames to host memory" in said
    assert "summed over its" in said and "concurrent reads" in said
    rows = list(csv.DictReader(open(out)))
    assert [int(r["frame"]) for r in rows] == [0, 1, 2, 0, 1, 2] and nothing_partial(tmp_path)


def test_stream_stops_at_its_budget_and_reports_what_it_played(particle_file, capsys):
    assert main(["stream", str(particle_file), "--device", "cpu", "--loop", "10000", "--budget", "0.05", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["budget_spent"] is True and 1 <= summary["frames"] < summary["frames_asked"] == 30000
    assert summary["stored_bytes"] == summary["frames"] * 6000 * 32  # every frame played whole
    assert main(["stream", str(particle_file), "--device", "cpu", "--loop", "5", "--budget", "60"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "15 frames to host memory" in said and "budget" not in said


def test_stream_loop_is_bounded_by_the_frames_it_would_play(particle_file, capsys):
    assert main(["stream", str(particle_file), "--device", "cpu", "--loop", "99999999999999999999"]) == 2
    assert "--loop" in one_line(capsys.readouterr().err)
    many = particle_file.parent / "many.hrc"
    with headrace.Writer(many, [headrace.FieldSpec("v", "float32", 1)]) as writer:
        for t in range(200):
            writer.write(writer.add_frame(time=float(t)), "v", np.zeros(4, dtype=np.float32))
    assert main(["stream", str(many), "--device", "cpu", "--loop", "10000"]) == 2
    line = one_line(capsys.readouterr().err)
    assert "--loop 10000" in line and "2,000,000 frames" in line


def test_stream_fields_are_names(particle_file, capsys):
    assert main(["stream", str(particle_file), "--device", "cpu", "--fields", ""]) == 2
    assert "--fields" in one_line(capsys.readouterr().err)
    assert main(["stream", str(particle_file), "--device", "cpu", "--fields", "velocity"]) == 2
    assert "no field 'velocity'" in one_line(capsys.readouterr().err)


# ---- trace ----

def test_trace_checks_its_outputs_before_tracing(flows, tmp_path, capsys):
    blocks, _ = flows
    (tmp_path / "stats").mkdir()
    lines = tmp_path / "lines.npz"
    command = ["trace", str(blocks), "--seeds", "uniform:8", "--steps", "10", "--out", str(lines)]
    for stats in (tmp_path / "stats", tmp_path / "lines.npz" / "s.csv", tmp_path / "missing" / "s.csv"):
        assert main([*command, "--stats", str(stats)]) == 2
        assert "--stats" in one_line(capsys.readouterr().err)
        assert not lines.exists() and nothing_partial(tmp_path)  # the lines were not written and then let down
    assert main([*command[:-1], str(tmp_path / "stats"), "--stats", str(tmp_path / "s.csv")]) == 2
    assert "--out" in one_line(capsys.readouterr().err) and not (tmp_path / "s.csv").exists()
    assert main([*command, "--stats", str(tmp_path / "s.csv")]) == 0
    assert lines.exists() and float(next(csv.DictReader(open(tmp_path / "s.csv")))["seconds"]) > 0
    assert nothing_partial(tmp_path)


@pytest.mark.parametrize("option, value", [("--madvise-interval", "99999999999999999999"), ("--madvise-interval", "nan"),
                                           ("--madvise-interval", "-1"), ("--seeds", "uniform:99999999999999999999"),
                                           ("--seeds", "uniform:abc"), ("--seeds", "feature:abc"), ("--steps", "0"),
                                           ("--step-size", "99999999999999999999"), ("--unit-pages", "4"),
                                           ("--seed-stride", "-1"), ("--frame", "-1"), ("--threads", "99999")])
def test_trace_values_out_of_range_are_usage_errors(flows, tmp_path, capsys, option, value):
    command = ["trace", str(flows[0]), "--seeds", "uniform:8", "--out", str(tmp_path / "l.npz")]
    assert main([*command, option, value]) == 2
    assert option in one_line(capsys.readouterr().err)
    assert not list(tmp_path.iterdir())


def test_a_madvise_interval_past_a_day_is_refused_by_the_python_api_too(flows):
    seeds = streamlines.uniform_seeds(flows[0], 8)
    for interval in (1e10, float("nan"), -1.0):  # 1e10 s overflowed to nanoseconds in C++: a hang
        with pytest.raises(headrace.UsageError, match="madvise_interval_s"):
            streamlines.trace_run(flows[0], seeds, steps=10, manager="mmap", madvise_interval_s=interval)


def test_trace_refuses_lines_that_could_outgrow_the_memory(flows, tmp_path, capsys):
    assert main(["trace", str(flows[0]), "--seeds", "uniform:16000000", "--steps", "1000000", "--direction", "both",
                 "--out", str(tmp_path / "l.npz")]) == 2
    line = one_line(capsys.readouterr().err)
    assert "--seeds and --steps" in line and "memory" in line
    assert not list(tmp_path.iterdir())


def test_trace_help_states_the_ranges_beside_its_description(capsys):
    assert main(["trace", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "a multiple of 3 from 3 to" in out and "from 0 to 86400 seconds" in out
    assert "rake:X0,Y0,Z0:X1,Y1,Z1:N" in out


# ---- render ----

@pytest.mark.parametrize("option, value", [("--fps", "0"), ("--fps", "-1"), ("--fps", "nan"), ("--batch", "0"),
                                           ("--segments", "0"), ("--width", "99999999999999999999"), ("--fov", "180"),
                                           ("--camera", "orbit:0,90"), ("--background", "1,2"), ("--threads", "-1")])
def test_render_values_out_of_range_are_usage_errors(particle_file, tmp_path, capsys, option, value):
    assert main(["render", str(particle_file), "--frames", "0:2", "--out", str(tmp_path / "frames"), option, value]) == 2
    assert option in one_line(capsys.readouterr().err)
    assert not list(tmp_path.iterdir())


def test_render_checks_its_outputs_before_drawing(particle_file, tmp_path, capsys):
    (tmp_path / "folder").mkdir()
    for arguments, said in ((["--frame", "0", "--out", str(tmp_path / "folder")], "--out"),
                            (["--frame", "0", "--out", str(particle_file / "f.png")], "--out"),  # a file in the way
                            (["--frame", "0", "--out", str(tmp_path / "f.png"), "--video", str(tmp_path / "v.gif")], "--video"),
                            (["--frames", "0:2", "--out", str(particle_file)], "--out"),
                            (["--frames", "0:2", "--out", str(tmp_path / "frames"), "--fps", "5"], "--fps"),
                            (["--frames", "0:2", "--out", str(tmp_path / "frames"), "--video", str(tmp_path / "v.avi")],
                             "--video")):
        assert main(["render", str(particle_file), "--device", "cpu", *arguments]) == 2
        assert said in one_line(capsys.readouterr().err)
    assert [p.name for p in tmp_path.iterdir()] == ["folder"] and not list((tmp_path / "folder").iterdir())


# ---- bench particles ----

def test_bench_particles_refuses_a_file_that_is_not_particles_before_any_work(flows, tmp_path, capsys):
    out = tmp_path / "b.csv"
    assert main(["bench", "particles", str(flows[0]), "--device", "cpu", "--out", str(out)]) == 2
    line = one_line(capsys.readouterr().err)
    assert "not a particle container" in line and "velocity (float32 x 3)" in line
    assert not out.exists() and not out.with_suffix(".json").exists()


def test_bench_particles_refuses_a_gpu_method_on_the_cpu_and_bad_lists(particle_file, tmp_path, capsys):
    out = tmp_path / "b.csv"
    for methods in ("pread,vram", "kvikio", "ram-pinned"):
        assert main(bench_particles(particle_file, out, "--methods", methods)) == 2
        assert "needs a GPU" in one_line(capsys.readouterr().err)
    for option, value in (("--batches", "0"), ("--batches", "abc"), ("--segments", "-1"), ("--staging", "0"),
                          ("--staging", "99999999999999999999"), ("--methods", "bogus"), ("--sample", "0"),
                          ("--prewarm", "99999999999999999999"), ("--gpu-iterations", "0"), ("--wall-seconds", "nan"),
                          ("--budget", "0"), ("--seed", "-1"), ("--out", str(tmp_path)), ("--out", str(tmp_path / "b.json"))):
        assert main([*bench_particles(particle_file, out), option, value]) == 2
        assert option in one_line(capsys.readouterr().err)
    assert not list(tmp_path.iterdir())


def test_a_configuration_that_cannot_run_is_a_row_and_the_study_exits_1(particle_file, tmp_path, capsys, monkeypatch):
    from headrace.bench.cases import particles as study

    made = study.renderer_for

    def renderer_for(dataset, config, **options):
        if config["batch"] == 3000:
            raise headrace.errors.UnavailableError("no such backend here")
        return made(dataset, config, **options)

    monkeypatch.setattr(study, "renderer_for", renderer_for)
    out = tmp_path / "b.csv"
    assert main(bench_particles(particle_file, out)) == 1
    line = one_line(capsys.readouterr().err)
    assert "1 of 2 configurations could not run" in line and "no such backend here" in line and str(out) in line
    rows = list(csv.DictReader(open(out)))
    assert [(r["batch"], r["error"]) for r in rows] == [("1000", ""), ("3000", "no such backend here")]
    assert float(rows[0]["frame_seconds"]) > 0


def test_bench_particles_says_its_estimate_and_cache_state_and_stops_at_its_budget(particle_file, tmp_path, capsys,
                                                                                 monkeypatch):
    from headrace import page_cache

    evicted, dropped_all = [], []
    monkeypatch.setattr(page_cache, "evict_from_page_cache", lambda paths: evicted.append(list(paths)) or "fadvise")
    monkeypatch.setattr(page_cache, "drop_all_page_caches", lambda paths=(): dropped_all.append(list(paths)) or "drop_caches")
    out = tmp_path / "b.csv"
    assert main(bench_particles(particle_file, out, "--cache", "cold", "--budget", "0.001")) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "2 configurations on the CPU, cold: this file's pages evicted" in said and "at least 0.04 s" in said
    assert "budget of 0.001 s spent: 1 of 2 configurations measured" in said
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 1 and rows[0]["cache"] == "cold" and evicted and not dropped_all  # the file only

    def no_root(paths=()):
        raise headrace.UsageError("dropping the whole page cache needs root")

    monkeypatch.setattr(page_cache, "drop_all_page_caches", no_root)
    assert main(bench_particles(particle_file, tmp_path / "all.csv", "--cache", "drop-all")) == 2
    assert "needs root" in one_line(capsys.readouterr().err) and not (tmp_path / "all.csv").exists()
    assert main(bench_particles(particle_file, tmp_path / "s.csv", "--cache", "cold", "--series")) == 2
    assert "use it hot" in one_line(capsys.readouterr().err)


# ---- tune ----

TUNE = ["--device", "cpu", "--budget", "2", "--methods", "pread", "--batches", "1000,3000", "--segments", "2",
        "--staging", "16M", *SMALL_RENDER]


def test_tune_counts_what_could_not_run_and_fails_when_nothing_could(particle_file, tmp_path, capsys, monkeypatch):
    from headrace import tuning
    from headrace.bench.cases import particles as study

    made = study.renderer_for
    failing = {3000}

    def renderer_for(dataset, config, **options):
        if config["batch"] in failing or config["method"] == "auto":
            raise headrace.errors.UnavailableError(f"cannot run {config['batch']}")
        return made(dataset, config, **options)

    monkeypatch.setattr(study, "renderer_for", renderer_for)
    out = tmp_path / "tune.csv"
    assert main(["tune", str(particle_file), *TUNE, "--out", str(out)]) == 0
    line = one_line(capsys.readouterr().err)
    assert "2 of 3 configurations could not run" in line and "cannot run" in line
    rows = list(csv.DictReader(open(out)))
    assert {(r["batch"], bool(r["error"])) for r in rows} == {("1048576", True), ("1000", False), ("3000", True)}
    assert tuning.load_profile("cpu", "none")["batch"] == 1000

    failing.add(1000)
    assert main(["tune", str(particle_file), *TUNE, "--out", str(out), "--no-save"]) == 1
    line = one_line(capsys.readouterr().err)
    assert "3 of 3 configurations could not run" in line
    assert all(r["error"] for r in csv.DictReader(open(out)))
    assert tuning.load_profile("cpu", "none")["batch"] == 1000  # the stored profile stays


def test_tune_values_out_of_range_are_usage_errors(particle_file, capsys):
    for option, value in (("--budget", "nan"), ("--budget", "0"), ("--wall-seconds", "-1"), ("--batches", "0"),
                          ("--segments", "0"), ("--staging", "99999999999999999999"), ("--width", "0"),
                          ("--cache", "bogus")):
        assert main(["tune", str(particle_file), *TUNE, option, value]) == 2
        assert option in one_line(capsys.readouterr().err)


# ---- bench streamlines ----

def test_bench_streamlines_measures_in_the_cache_state_asked_and_stops_at_its_budget(flows, tmp_path, capsys):
    blocks, hilbert = flows
    out = tmp_path / "io.csv"
    command = ["bench", "streamlines", str(blocks), str(hilbert), "--study", "io", "--seeds", "uniform:8", "--steps",
               "10", "--threads", "1", "--chunk-pages", "3,6", "--cache-bytes", "64K", "--out", str(out)]
    assert main([*command, "--budget", "0.000001"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "cold: this file's pages evicted" in said and "budget of 1e-06 s spent: 1 of" in said
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == 1 and rows[0]["cache"] == "cold" and rows[0]["cache_method"].startswith("fadvise")
    assert main([*command, "--cache", "hot"]) == 0  # another cache state: other points, none resumed
    rows = list(csv.DictReader(open(out)))
    assert [r["cache"] for r in rows].count("hot") == 2 * 2 * 3  # every point of io: I/O x chunk pages x threads
    capsys.readouterr()
    for option, value in (("--scalings", "bogus"), ("--threads", "abc"), ("--threads", "0"), ("--chunk-pages", "4"),
                          ("--repeats", "0"), ("--repeats", "99999999999999999999"), ("--out", str(tmp_path)),
                          ("--budget", "-1"), ("--cache", "bogus")):
        assert main([*command, option, value]) == 2
        assert option in one_line(capsys.readouterr().err)


# ---- demo ----

def test_demo_refuses_an_output_it_cannot_use_before_writing(tmp_path, capsys, monkeypatch):
    from headrace import page_cache
    from headrace.cli import demo

    (tmp_path / "file").write_text("x")
    assert main(["demo", "--out", str(tmp_path / "file"), "--particles", "1000", "--frames", "1"]) == 2
    assert "a file, not a folder" in one_line(capsys.readouterr().err)
    monkeypatch.setattr(demo.shutil, "disk_usage", lambda path: type("U", (), {"free": 1 << 20})())
    assert main(["demo", "--out", str(tmp_path / "d"), "--particles", "100000", "--frames", "2"]) == 2
    assert "--particles x --frames" in one_line(capsys.readouterr().err)
    monkeypatch.undo()

    def no_root(paths=()):
        raise headrace.UsageError("dropping the whole page cache needs root")

    monkeypatch.setattr(page_cache, "drop_all_page_caches", no_root)
    assert main(["demo", "--out", str(tmp_path / "d"), "--particles", "1000", "--frames", "1", "--cache", "drop-all"]) == 2
    assert "needs root" in one_line(capsys.readouterr().err)
    for option, value in (("--particles", "99999999999999999999"), ("--frames", "0"), ("--seed", "-1"),
                          ("--repeats", "0"), ("--budget", "nan")):
        assert main(["demo", "--out", str(tmp_path / "d"), option, value]) == 2
        assert option in one_line(capsys.readouterr().err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_demo_says_its_cache_state_and_keeps_what_its_budget_measured(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--particles", "20000", "--frames", "1", "--repeats", "1",
                 "--budget", "0.000001", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["cache"] == "cold" and len(report["results"]) == 1 and report["skipped_by_budget"] >= 1
    assert report["results"][0]["cache_method"].startswith("fadvise")
    assert (out / "backends.csv").read_text().count("\n") == 2 and (out / "frame0.png").exists()
    assert nothing_partial(tmp_path)


# ---- progress ----

def test_long_commands_count_their_work_on_a_progress_bar_with_a_total(particle_file, flows, tmp_path, monkeypatch):
    """Each bar has a total, which is what its time-remaining estimate needs, and is advanced to it."""
    from contextlib import contextmanager

    from headrace.cli import bench, render, stream, trace, tune

    bars: list[list] = []

    @contextmanager
    def counted(description, total, enabled=True):
        bar = [description, total, 0]
        bars.append(bar)

        def advance(steps=1, total=None):
            bar[2] += steps
            bar[1] = total or bar[1]
        yield advance

    @contextmanager
    def measured(description, total, enabled=True):
        bar = [description, total, 0]
        bars.append(bar)

        def update(done, total=None):
            bar[2] = done
        yield update

    for command in (bench, render, trace, tune):
        monkeypatch.setattr(command, "count_progress", counted)
    monkeypatch.setattr(stream, "byte_progress", measured)
    assert main(["stream", str(particle_file), "--device", "cpu", "--loop", "3"]) == 0
    assert bars[-1] == ["streaming 9 frames", 9 * 6000 * 32, 9 * 6000 * 32]
    assert main(bench_particles(particle_file, tmp_path / "b.csv")) == 0
    assert bars[-1] == ["particles study", 2, 2]
    assert main(["render", str(particle_file), "--frames", "0:3", "--out", str(tmp_path / "frames"), "--device", "cpu",
                 "--width", "32", "--height", "24"]) == 0
    assert bars[-1] == ["rendering 3 frames", 3, 3]
    assert main(["bench", "streamlines", str(flows[0]), str(flows[1]), "--study", "io", "--seeds", "uniform:8",
                 "--steps", "10", "--threads", "1", "--chunk-pages", "3", "--out", str(tmp_path / "s.csv")]) == 0
    assert bars[-1] == ["io study", 6, 6]  # standard and direct I/O x 1, 2 and 8 threads
    assert main(["trace", str(flows[0]), "--seeds", "uniform:8", "--steps", "10", "--out", str(tmp_path / "l.npz")]) == 0
    assert bars[-1] == ["tracing 8 lines of up to 10 steps on the CPU", 8, 8]
    assert main(["tune", str(particle_file), *TUNE, "--budget", "1", "--no-save"]) == 0
    assert bars[-1][0].startswith("tuning") and bars[-1][1] == 1


def test_render_budget_keeps_the_frames_drawn_and_says_how_many(particle_file, tmp_path, capsys):
    frames = tmp_path / "frames"
    assert main(["render", str(particle_file), "--frames", "0:3", "--out", str(frames), "--device", "cpu",
                 "--width", "32", "--height", "24", "--budget", "0.000001"]) == 0
    said = capsys.readouterr().out
    assert "budget of 1e-06 s spent: 1 of 3 frames rendered" in said and "(1 images)" in said
    assert sorted(p.name for p in frames.iterdir()) == ["frame_00000.png"]
