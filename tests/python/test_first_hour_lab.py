"""The lab runs on every particle file the product writes (issue 35): ``bench particles``, ``tune`` and
``bench scaling`` on an uncompressed file (the default of ``generate`` and of every MMPLD conversion), on
compressed ones (lz4, a codec chain) and on files whose series holds empty frames (format 1.2), with the
engine's read path (``auto``) among the methods measured and a method this machine cannot run left out
with the reason said. Guards: every uncompressed file failed at once with ``backend 'auto': expected
posix|direct|...``."""

from __future__ import annotations

import csv
import json
import math
import statistics

import numpy as np
import pytest

import headrace
from headrace import _ext
from headrace.bench.cases import particles as study
from headrace.cli._particles import method_unavailable_reason
from headrace.cli.main import main
from headrace.workloads.particles import GPU_METHODS, METHODS

COUNTS = [3000, 0, 1200, 0, 0, 500]  # empty frames in the middle, at the end, two in a row
DEVICES = ["cpu", pytest.param(0, marks=pytest.mark.gpu)]
FAST = ["--batches", "2000", "--segments", "2", "--staging", "64M", "--wall-seconds", "0.02", "--width", "32",
        "--height", "24"]


def _empty_frames(path, codec: str) -> None:
    rng = np.random.default_rng(3)
    with headrace.Writer(path, [headrace.FieldSpec("particles", "float32", 8)], codec=codec,
                         chunk_size_bytes=16 << 10) as writer:
        for t, count in enumerate(COUNTS):
            particles = rng.random((count, 8), dtype=np.float32)
            particles[:, 3] = 0.02
            writer.write(writer.add_frame(time=float(t)), "particles", particles)


# name: (codec, the compressed-* method that reads it, empty frames)
FILES = {"plain": ("none", None, False), "lz4": ("lz4", "compressed-lz4", False),
         "chain": ("shuffle|zstd", "compressed-chain", False), "empty-frames": ("none", None, True),
         "empty-frames-zstd": ("zstd", "compressed-zstd", True)}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lab")
    made = {}
    for name, (codec, _, empty) in FILES.items():
        path = folder / f"{name}.hrc"
        if empty:
            _empty_frames(path, codec)
        else:  # as a user makes them
            assert main(["generate", "particles", str(path), "--particles", "3000", "--frames", "2", "--chunk-size",
                         "16K", "--codec", codec]) == 0
        made[name] = path
    return made


def expected_methods(name: str, path, device) -> set[str]:
    """What the lab measures by default: auto always; the compressed-* method of a compressed file, or every
    method reading plain chunks whose backend this machine has (the GPU's only on a GPU)."""
    _, compressed, _ = FILES[name]
    if compressed:
        candidates = ["auto", compressed]
    else:
        candidates = [m for m in METHODS if not m.startswith("compressed-") and (device != "cpu" or m not in GPU_METHODS)]
    return {m for m in candidates if m == "auto" or _ext.backend_unavailable_reason(METHODS[m][0], str(path)) is None}


def particles_per_frame(name: str) -> float:
    """What a row says: the mean over the series (a series of frames of different sizes is timed whole)."""
    return statistics.fmean(COUNTS) if FILES[name][2] else 3000


def finite(row: dict[str, str], *names: str) -> None:
    for name in names:
        assert math.isfinite(float(row[name])) and float(row[name]) >= 0, (name, row[name])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(FILES))
def test_bench_particles_measures_every_method_this_machine_runs(files, name, device, tmp_path):
    out = tmp_path / "rows.csv"
    status = main(["bench", "particles", str(files[name]), "--device", str(device), "--prewarm", "1",
                   "--gpu-iterations", "1", *FAST, "--out", str(out)])
    assert status == 0
    rows = list(csv.DictReader(out.open()))
    assert {r["method"] for r in rows} == expected_methods(name, files[name], device)
    assert "auto" in {r["method"] for r in rows}
    for row in rows:
        assert not row.get("error"), row["error"]
        finite(row, "frame_seconds", "wall_seconds", "draw_min_s", "draw_median_s", "draw_max_s",
               "segment_waits_per_frame", "stored_bytes_per_frame", "batches_per_frame")
        assert float(row["frame_seconds"]) > 0
        assert int(row["wall_frames"]) >= (len(COUNTS) if FILES[name][2] else 1)
        assert float(row["particles_per_frame"]) == pytest.approx(particles_per_frame(name), abs=0.01)
    rows_json = json.loads(out.with_suffix(".json").read_text())
    assert [r["method"] for r in rows_json] == [r["method"] for r in rows]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(FILES))
def test_tune_finds_and_stores_a_profile(files, name, device, tmp_path, monkeypatch):
    profiles = tmp_path / "profiles.json"
    monkeypatch.setenv("HEADRACE_PROFILES", str(profiles))
    out = tmp_path / "tuned.csv"
    assert main(["tune", str(files[name]), "--device", str(device), "--budget", "1", *FAST, "--out", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert rows[0]["method"] == "auto" and int(rows[0]["batch"]) == 1 << 20  # the defaults, measured first
    assert {r["method"] for r in rows} <= expected_methods(name, files[name], device) - set(study.BASELINES)
    for row in rows:
        assert not row.get("error"), row["error"]
        finite(row, "frame_seconds")
    stored = json.loads(profiles.read_text())
    (per_codec,) = stored.values()
    (codec,) = headrace.open(files[name]).codecs
    best = per_codec[codec]
    assert best["method"] in {r["method"] for r in rows}
    assert best["frame_seconds"] == min(float(r["frame_seconds"]) for r in rows)


def test_a_series_of_frames_of_different_sizes_is_timed_whole(files, tmp_path):
    """Empty frames among full ones: the timed frames start at the first and take in every frame, so the
    frame time is the series', not that of whichever frames the wall time happened to reach; the overlap
    of streaming and drawing is measured on the frames that hold particles, against their own draw time."""
    out = tmp_path / "rows.csv"
    assert main(["bench", "particles", str(files["empty-frames"]), "--device", "cpu", "--methods", "auto,pread",
                 "--prewarm", "1", "--gpu-iterations", "1", *FAST, "--overlap", "--out", str(out)]) == 0
    for row in csv.DictReader(out.open()):
        assert int(row["wall_frames"]) >= len(COUNTS) and float(row["particles_per_frame"]) == pytest.approx(
            statistics.fmean(COUNTS), abs=0.01)
        finite(row, "overlap_frame_s", "stream_only_s", "overlap_ratio")
        # Frame time over max(streaming alone, drawing alone) of the same frames: about 1 or more, never 0.
        assert 0.3 < float(row["overlap_ratio"]) < 50, row["overlap_ratio"]
    from headrace.bench.harness import read_rows
    from headrace.bench.particles_report import report

    text = report(read_rows(out))  # the CPU's rows copy nothing: no copy rate divided by zero
    assert "### empty-frames.hrc: 783.33 (mean) particles per frame, device cpu, hot" in text


def test_algorithm3_times_a_whole_series_from_its_first_frame():
    class Sized:
        dataset = type("D", (), {"path": "/dev/null"})()

        def __init__(self) -> None:
            self.frames: list[int] = []

        def render(self, frame, draw=True):
            self.frames.append(frame)
            particles = COUNTS[frame]
            return {"seconds": 1e-3, "draw_seconds": 5e-4, "segment_waits": 0, "stored_bytes": 32 * particles,
                    "particles": particles, "batches": 1 if particles else 0, "h2d_seconds": None}

    renderer = Sized()
    result = study.algorithm3(renderer, list(range(len(COUNTS))), cache="hot", prewarm=1, wall_seconds=0.0,
                              gpu_iterations=1, whole_series=True)
    assert result.wall_frames == len(COUNTS) and renderer.frames[-len(COUNTS):] == list(range(len(COUNTS)))
    assert result.particles_per_frame == round(statistics.fmean(COUNTS), 2)
    assert result.row()["stored_bytes_per_frame"] == 32 * sum(COUNTS) // len(COUNTS)
    assert result.batches_per_frame == 0.5


def test_bench_scaling_streams_and_renders_each_kind_of_file(files, tmp_path):
    names = ["plain", "chain", "empty-frames-zstd"]
    out = tmp_path / "scaling"
    assert main(["bench", "scaling", *(str(files[n]) for n in names), "--ranks", "1", "--device", "cpu", "--cache", "hot",
                 "--frames", "2", "--hot-bytes", "1M", "--repeats", "1", "--width", "32", "--height", "24",
                 "--out", str(out)]) == 0
    rows = list(csv.DictReader((out / "scaling.csv").open()))
    for name in names:
        mine = {r["workload"]: r for r in rows if r["file"] == f"{name}.hrc"}
        assert set(mine) == {"stream", "stream-python", "render", "render-auto"}, name
        finite(mine["stream"], "gbps", "seconds")
        finite(mine["stream-python"], "gbps", "seconds")
        finite(mine["render"], "fps", "seconds", "load_s_median", "draw_s_median")
        assert float(mine["stream"]["gbps"]) > 0 and float(mine["render"]["fps"]) > 0


# ---- a method this machine cannot run is left out, and said ----


def _without_io_uring(monkeypatch) -> None:
    real = _ext.backend_unavailable_reason

    def reason(kind: str, path: str) -> str | None:
        return "io_uring disabled by the kernel" if kind == "uring" else real(kind, path)

    monkeypatch.setattr(_ext, "backend_unavailable_reason", reason)


def test_a_missing_backend_leaves_its_methods_out_and_says_why(files, tmp_path, monkeypatch, capsys):
    _without_io_uring(monkeypatch)
    out = tmp_path / "rows.csv"
    assert main(["bench", "particles", str(files["lz4"]), "--device", "cpu", "--prewarm", "1", "--gpu-iterations",
                 "1", *FAST, "--out", str(out)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "methods left out: compressed-lz4 (io_uring disabled by the kernel)" in said
    assert [r["method"] for r in csv.DictReader(out.open())] == ["auto"]  # the read path falls back, and runs

    from headrace.cli._particles import particle_methods

    methods, left_out = particle_methods("cpu", str(files["plain"]))
    assert "auto" in methods and not {"uring-naive", "uring-batched"} & set(methods)
    assert left_out == {"vram": "GPU only: this run is on the CPU", "ram-pinned": "GPU only: this run is on the CPU",
                        "cufile": "GPU only: this run is on the CPU", "uring-naive": "io_uring disabled by the kernel",
                        "uring-batched": "io_uring disabled by the kernel"}


def test_under_strict_settings_no_method_that_can_run_is_an_error_naming_why(files, tmp_path, monkeypatch, capsys):
    _without_io_uring(monkeypatch)
    monkeypatch.setenv("HEADRACE_STRICT", "1")
    assert method_unavailable_reason("auto", str(files["plain"]), "cpu") == (
        "strict settings forbid the read path's fallback (io_uring unavailable: io_uring disabled by the kernel)")
    assert main(["tune", str(files["lz4"]), "--device", "cpu", "--budget", "1", *FAST]) == 1
    err = capsys.readouterr().err.strip()
    assert err.endswith("no streaming method can run here: auto (strict settings forbid the read path's fallback "
                        "(io_uring unavailable: io_uring disabled by the kernel)); compressed-lz4 (io_uring disabled "
                        "by the kernel)"), err
    assert len(err.splitlines()) == 1
