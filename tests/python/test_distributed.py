"""headrace over MPI (headrace.distributed): one process is one rank, as without MPI; under ``mpiexec -n 2``
and ``-n 4`` each rank streams its own block of frames and rank 0 reports the job; a rank that fails ends
every rank with a clear error, never a hang (each run has a timeout)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import headrace
from headrace import FieldSpec
from headrace.distributed import Ranks, launched_by_mpi, ranks

MPIEXEC = shutil.which("mpiexec")
RUN_TIMEOUT_S = 120


def _mpi_ready() -> str:
    if MPIEXEC is None:
        return "no mpiexec (Debian's mpich: scripts/setup.sh installs it)"
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (scripts/setup.sh builds it against Debian's MPICH)"
    return ""


needs_mpi = pytest.mark.skipif(bool(_mpi_ready()), reason=_mpi_ready() or "MPI ready")


@pytest.fixture(scope="module")
def series(tmp_path_factory):
    """7 frames of 3000 particles (7 does not divide among 2 or 4 ranks)."""
    path = tmp_path_factory.mktemp("distributed") / "s.hrc"
    with headrace.Writer(path, [FieldSpec("particles", "float32", 8)], chunk_size_bytes=1 << 14) as w:
        for t in range(7):
            w.write(w.add_frame(time=float(t)), "particles", np.random.default_rng(t).random((3000, 8), dtype=np.float32))
    return path


# Open MPI refuses to start as root unless told twice (containers, CI); MPICH ignores these.
AS_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def _mpiexec(ranks_asked: int, *command: str) -> subprocess.CompletedProcess:
    assert MPIEXEC is not None
    return subprocess.run([MPIEXEC, "-n", str(ranks_asked), sys.executable, "-m", "headrace", *command],
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env={**os.environ, **AS_ROOT})


def _mpiexec_script(folder: Path, ranks_asked: int, text: str) -> subprocess.CompletedProcess:
    """A Python script of ``text``, run by ``ranks_asked`` ranks."""
    assert MPIEXEC is not None
    script = folder / "job.py"
    script.write_text(text)
    return subprocess.run([MPIEXEC, "-n", str(ranks_asked), sys.executable, str(script)], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, env={**os.environ, **AS_ROOT})


def test_one_process_is_one_rank_as_without_mpi():
    assert not launched_by_mpi()
    job = ranks()
    assert (job.rank, job.size, job.comm) == (0, 1, None) and job.root
    assert job.frames_of(7) == list(range(7)) and job.device(0) == 0 and job.device("cpu") == "cpu"
    assert job.gather("x") == ["x"] and job.allgather(3) == [3]


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 9])
def test_frames_are_shared_in_contiguous_blocks_of_sizes_within_one(size):
    for frames in (0, 1, 7, 8, 100):
        shares = [Ranks(rank, size).frames_of(frames) for rank in range(size)]
        assert [t for share in shares for t in share] == list(range(frames))
        lengths = [len(share) for share in shares]
        assert max(lengths) - min(lengths) <= 1


@needs_mpi
@pytest.mark.parametrize("size", [2, 4])
def test_every_rank_streams_its_own_frames_and_rank_0_reports_the_job(series, size):
    alone = json.loads(subprocess.run([sys.executable, "-m", "headrace", "stream", str(series), "--device", "cpu",
                                       "--json"], capture_output=True, text=True, check=True).stdout)
    done = _mpiexec(size, "stream", str(series), "--device", "cpu", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # one document: rank 0's
    job, per_rank = report["job"], report["per_rank"]
    assert job["ranks"] == size and job["frames"] == 7 and [r["rank"] for r in per_rank] == list(range(size))
    shares = [r["frames_played"] for r in per_rank]
    assert shares == [Ranks(rank, size).frames_of(7) for rank in range(size)]
    assert job["raw_bytes"] == alone["raw_bytes"] and job["stored_bytes"] == alone["stored_bytes"]
    assert job["delivered_gbps"] > 0 and job["seconds"] == max(r["seconds"] for r in per_rank)
    text = _mpiexec(size, "stream", str(series), "--device", "cpu")
    assert text.returncode == 0, text.stderr
    said = " ".join(text.stdout.split())  # the console wraps lines at its width
    assert f"7 frames to host memory by {size} ranks" in said and f"rank {size - 1} (local {size - 1}" in said


@needs_mpi
def test_a_rank_that_fails_stops_every_rank_with_a_clear_error(series, tmp_path):
    broken = tmp_path / "broken.hrc"
    shutil.copyfile(series, broken)
    table = headrace.open(broken).container.chunk_table()
    last = int(np.flatnonzero(table["frame"] == 6)[0])  # rank 1 of 2 streams frames 3..6
    with open(broken, "r+b") as f:
        f.seek(int(table["offset"][last]) + 8)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    done = _mpiexec(2, "stream", str(broken), "--device", "cpu")  # the timeout would say it hung
    assert done.returncode != 0
    assert "rank 1 of 2 failed" in done.stderr and "checksum" in done.stderr.lower() and "frame 6" in done.stderr


@pytest.fixture(scope="module")
def cloud(tmp_path_factory):
    """3 frames of 20,000 small particles in chunks of 512: frames shared among ranks by space."""
    path = tmp_path_factory.mktemp("distributed-cloud") / "c.hrc"
    with headrace.Writer(path, [FieldSpec("particles", "float32", 8)], chunk_size_bytes=1 << 14) as w:
        for t in range(3):
            data = np.random.default_rng(10 + t).random((20_000, 8), dtype=np.float32)
            data = data[np.argsort(data[:, 0] + 0.3 * data[:, 1])]  # chunks that are regions of space
            data[:, 3] = 0.004 + 0.01 * data[:, 3]
            data[:, 7] = 1
            w.write(w.add_frame(time=float(t), bbox=((0, 0, 0), (1, 1, 1))), "particles", data)
    return path


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_a_frames_chunks_are_shared_by_space_each_once(cloud, size):
    from headrace.workloads.particles.sort_last import share_chunks

    ds = headrace.open(cloud)
    shares = share_chunks(ds, 1, "particles", size)
    assert sorted(c for share in shares for c in share) == list(range(40))
    table = ds.container.chunk_table()
    rows = np.flatnonzero(table["frame"] == 1)
    centre_x = [[np.mean([ds.container.chunk_range(int(rows[c]))[k][0] for k in (0, 1)]) for c in share] for share in shares]
    for left, right in zip(centre_x, centre_x[1:]):  # the longest axis here is x: the ranks' runs follow it
        assert max(left) <= min(right)
    lows, highs = ds.container.chunk_ranges(int(rows[0]), rows.size)  # what share_chunks reads, in one call
    assert lows.shape == highs.shape == (40, 8)
    for k in (0, 17, 39):
        np.testing.assert_array_equal(lows[k], ds.container.chunk_range(int(rows[k]))[0])
        np.testing.assert_array_equal(highs[k], ds.container.chunk_range(int(rows[k]))[1])
    with pytest.raises(headrace.UsageError, match="chunks 100 to 200 of 120"):
        ds.container.chunk_ranges(100, 100)


@needs_mpi
@pytest.mark.parametrize("size", [2, 4])
def test_a_frame_drawn_by_every_rank_and_composited_is_the_single_rank_image(cloud, tmp_path, size):
    from PIL import Image

    common = ["--frame", "1", "--device", "cpu", "--width", "200", "--height", "150", "--camera", "orbit:40,25"]
    subprocess.run([sys.executable, "-m", "headrace", "render", str(cloud), "--out", str(tmp_path / "one.png"), *common],
                   check=True, capture_output=True, timeout=RUN_TIMEOUT_S)
    done = _mpiexec(size, "render", str(cloud), "--out", str(tmp_path / "many.png"), "--stats", "--distribute", "sort-last",
                    *common)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())  # the console wraps lines at its width
    assert f"drawn by {size} ranks and composited by depth (host memory over MPI (the ranks draw on the CPU)" in said
    assert f"rank {size - 1}" in said
    one = np.asarray(Image.open(tmp_path / "one.png"))
    many = np.asarray(Image.open(tmp_path / "many.png"))
    assert (one[..., :3] > 0).any(axis=2).mean() > 0.05  # a picture, not a blank
    np.testing.assert_array_equal(many, one)


@pytest.fixture(scope="module")
def amr(tmp_path_factory):
    """Three levels, small chunks: a rank reads the chunks of its slab, not the frame."""
    from headrace.generate import generate_amr

    return generate_amr(tmp_path_factory.mktemp("distributed") / "a.hrc", cells=300_000, levels=3, frames=2, seed=4,
                        chunk_size_bytes=1 << 15)


def _channels_off(a: np.ndarray, b: np.ndarray) -> tuple[float, int]:
    difference = np.abs(a[..., :3].astype(np.int64) - b[..., :3].astype(np.int64))
    return float((difference > 2).mean()), int(difference.max())


def test_a_slabs_chunks_hold_its_cells_and_one_rank_draws_the_whole_frame(amr):
    from headrace.workloads.volume import VolumeRenderer, chunks_holding, render_volume

    ds = headrace.open(amr)
    renderer = VolumeRenderer(ds, device="cpu", width=120, height=90)
    topology = renderer.topology
    shares = []
    for first, last in topology.cut_slabs(4):
        runs = topology.slab_cells(first, last)
        positions, held = chunks_holding(ds.container, 1, renderer.field, runs)
        ends = held[:, 0] + held[:, 1]
        for start, count in runs:  # every run lies in chunks read one after another
            k = np.searchsorted(held[:, 0], start, side="right") - 1
            while ends[k] < start + count:
                assert held[k + 1, 0] == ends[k]
                k += 1
        shares.append(held[:, 1].sum() / topology.cell_count)
        assert positions == sorted(positions)
    assert max(shares) < 1.0  # no rank reads the whole frame
    image, stats = render_volume(ds, 1, device="cpu", width=120, height=90)
    assert stats["layers"] == (0, topology.cut_slabs(1)[0][1]) and stats["ranks"] == 1
    off, most = _channels_off(image, renderer.render(1))
    assert most <= 1 and (renderer.render(1)[..., :3] > 0).any(axis=2).mean() > 0.02


@needs_mpi
@pytest.mark.parametrize("size", [2, 4])
@pytest.mark.parametrize("mode", ["dvr", "iso"])
def test_a_volume_frame_drawn_by_every_rank_in_slabs_is_the_single_rank_image(amr, tmp_path, size, mode):
    from PIL import Image

    common = ["--frame", "1", "--device", "cpu", "--width", "160", "--height", "120", "--camera", "orbit:35,25",
              "--mode", mode, "--opacity", "ramp:0.2,0.9,0.6"]
    subprocess.run([sys.executable, "-m", "headrace", "render", str(amr), "--out", str(tmp_path / "one.png"), *common],
                   check=True, capture_output=True, timeout=RUN_TIMEOUT_S)
    done = _mpiexec(size, "render", str(amr), "--out", str(tmp_path / "many.png"), "--stats", "--distribute", "sort-last",
                    *common)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())
    assert f"drawn by {size} ranks a slab each, composited front to back" in said and f"rank {size - 1}" in said
    one = np.asarray(Image.open(tmp_path / "one.png"))
    many = np.asarray(Image.open(tmp_path / "many.png"))
    assert (one[..., :3] > 0).any(axis=2).mean() > 0.05  # a picture, not a blank
    off, most = _channels_off(many, one)
    assert off <= 0.002, f"{off:.2%} of the channels differ by more than 2 levels (most {most})"
    if mode == "dvr":
        assert most <= 3


@needs_mpi
@pytest.mark.parametrize("size", [2, 4])
def test_streamlines_traced_by_every_rank_are_the_single_rank_lines(tmp_path, size):
    from headrace.generate import generate_flow

    flow = generate_flow(tmp_path / "f.hrc", dims=(33, 29, 25), frames=1, seed=3)
    common = ["--seeds", "uniform:300", "--steps", "200", "--device", "cpu", "--threads", "1"]
    subprocess.run([sys.executable, "-m", "headrace", "trace", str(flow), "--out", str(tmp_path / "one.npz"), *common],
                   check=True, capture_output=True, timeout=RUN_TIMEOUT_S)
    done = _mpiexec(size, "trace", str(flow), "--out", str(tmp_path / "many.npz"), *common)
    assert done.returncode == 0, done.stderr
    assert f"by {size} ranks" in " ".join(done.stdout.split())
    one, many = np.load(tmp_path / "one.npz"), np.load(tmp_path / "many.npz")
    assert sorted(one.files) == sorted(many.files)
    for name in one.files:
        np.testing.assert_array_equal(many[name], one[name], err_msg=name)
    assert len(one["offsets"]) > 300  # uniform:300 seeds a grid of at least 300 points


@needs_mpi
@pytest.mark.parametrize("what", ["--pathlines", "--streaklines"])
def test_pathlines_and_streaklines_traced_by_every_rank_are_the_single_rank_ones(tmp_path, what):
    from headrace.generate import generate_flow

    gyre = generate_flow(tmp_path / "g.hrc", dims=(33, 17, 17), frames=6, kind="double-gyre", dt=0.2)
    common = [what, "--seeds", "uniform:40", "--step-size", "0.05", "--device", "cpu", "--threads", "1"]
    subprocess.run([sys.executable, "-m", "headrace", "trace", str(gyre), "--out", str(tmp_path / "one.npz"), *common],
                   check=True, capture_output=True, timeout=RUN_TIMEOUT_S)
    done = _mpiexec(3, "trace", str(gyre), "--out", str(tmp_path / "many.npz"), *common)
    assert done.returncode == 0, done.stderr
    assert "by 3 ranks" in " ".join(done.stdout.split())
    one, many = np.load(tmp_path / "one.npz"), np.load(tmp_path / "many.npz")
    assert sorted(one.files) == sorted(many.files)
    for name in one.files:
        np.testing.assert_array_equal(many[name], one[name], err_msg=name)


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    """An ABC flow in native blocks: 6 planes of blocks along z (4 ranks hold one or two each)."""
    from headrace.generate import generate_flow

    return generate_flow(tmp_path_factory.mktemp("distributed") / "f.hrc", dims=(33, 29, 41), frames=1, seed=3,
                         block=(8, 8, 8))


def test_the_field_is_handed_off_when_it_does_not_fit_a_ranks_cache(flow, tmp_path):
    from headrace.workloads.streamlines import convert_to_hilbert, distribution

    frame_bytes = 33 * 29 * 41 * 12
    assert distribution(flow, "auto", frame_bytes * 2) == "replicate"
    assert distribution(flow, "auto", frame_bytes // 2) == "hand-off"
    assert distribution(flow, "replicate", 4096) == "replicate"
    hilbert = tmp_path / "h.hrc"
    convert_to_hilbert(flow, hilbert, bits=3)
    assert distribution(hilbert, "auto", 4096) == "replicate"  # a Hilbert unit has no neighbours to hold
    with pytest.raises(headrace.UsageError, match="native blocks"):
        distribution(hilbert, "hand-off", 4096)


def test_one_rank_handing_off_traces_one_tracers_lines(flow):
    from headrace.workloads.streamlines import trace_handed, trace_run, uniform_seeds

    seeds = uniform_seeds(flow, 200)
    one = trace_run(flow, seeds, steps=150, direction="both", device="cpu", threads=2)
    handed = trace_handed(flow, seeds, steps=150, direction="both", device="cpu", threads=2)
    assert handed is not None and handed.stats["lines_handed"] == 0
    # Where the time went: the phases, one after another, add up to the trace's seconds.
    phases = handed.stats["phase_seconds"]
    assert list(phases) == ["made", "stepping", "exchanging", "to_owners", "assembling", "to_rank_0"]
    assert all(t >= 0 for t in phases.values()) and phases["stepping"] > 0
    assert sum(phases.values()) == pytest.approx(handed.stats["seconds"], rel=1e-6)
    np.testing.assert_array_equal(handed.points, one.points)
    np.testing.assert_array_equal(handed.offsets, one.offsets)
    np.testing.assert_array_equal(handed.times, one.times)
    assert handed.ends == one.ends


@needs_mpi
# auto hands off at 600 KiB: the frame's 737 KB of velocity blocks do not fit; a rank's share does. At 100 KiB
# (16 blocks) a rank's share does not either: its cache loads its blocks as its lines wait for them.
@pytest.mark.parametrize("size,distribute,cache", [(2, "hand-off", "1G"), (4, "hand-off", "1G"), (3, "auto", "600K"),
                                                   (2, "auto", "100K")])
def test_streamlines_handed_between_ranks_are_the_single_rank_lines(flow, tmp_path, size, distribute, cache):
    common = ["--seeds", "uniform:300", "--steps", "300", "--direction", "both", "--device", "cpu", "--threads", "1",
              "--integrator", "rk45"]
    subprocess.run([sys.executable, "-m", "headrace", "trace", str(flow), "--out", str(tmp_path / "one.npz"), *common],
                   check=True, capture_output=True, timeout=RUN_TIMEOUT_S)
    done = _mpiexec(size, "trace", str(flow), "--out", str(tmp_path / "many.npz"), "--distribute", distribute,
                    "--cache-bytes", cache, *common)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())
    assert f"by {size} ranks (to the lines on rank 0)" in said and "hand-off-managed" in said
    assert "the job's time (each phase's slowest rank; the last, rank 0's): made" in said
    handed = int(said.split("hand-off: ")[1].split(" lines handed")[0])
    assert handed > 0  # the lines cross the ranks' planes
    one, many = np.load(tmp_path / "one.npz"), np.load(tmp_path / "many.npz")
    assert sorted(one.files) == sorted(many.files)
    for name in one.files:
        np.testing.assert_array_equal(many[name], one[name], err_msg=name)


@needs_mpi
def test_fail_together_stops_every_rank_from_python(tmp_path):
    done = _mpiexec_script(tmp_path, 2,
                           "from headrace.distributed import fail_together\n"
                           "with fail_together('my job') as job:\n"
                           "    if job.rank == 1:\n"
                           "        raise ValueError('no frame 99 here')\n"
                           "    job.barrier()  # rank 0 would wait here forever for rank 1\n")
    assert done.returncode != 0 and "my job (rank 1 of 2): no frame 99 here; stopping every rank" in done.stderr


@needs_mpi
def test_rows_of_every_rank_arrive_on_rank_0_in_rank_order_as_bytes(tmp_path):
    done = _mpiexec_script(tmp_path, 3,
        "import numpy as np\n"
        "from headrace.distributed import ranks\n"
        "job = ranks()\n"
        "rows = np.arange(job.rank * 4, dtype=np.float32).reshape(job.rank, 4) + job.rank * 100\n"  # rank 0: none
        "got = job.gather_rows(rows)\n"
        "if job.root:\n"
        "    want = np.concatenate([np.arange(r * 4, dtype=np.float32).reshape(r, 4) + r * 100 for r in range(job.size)])\n"
        "    assert got.dtype == np.float32 and got.shape == want.shape and (got == want).all(), (got, want)\n"
        "    print('rows', got.shape[0])\n"
        "else:\n"
        "    assert got is None\n")
    assert done.returncode == 0 and "rows 3" in done.stdout, done.stderr


@needs_mpi
def test_rows_sent_to_every_rank_arrive_from_each_in_rank_order(tmp_path):
    done = _mpiexec_script(tmp_path, 3,
        "import numpy as np\n"
        "from headrace.distributed import ranks\n"
        "job = ranks()\n"
        "def rows(sender, to):\n"  # sender s sends rank t s + t rows of (s, t, k)
        "    return np.array([(sender, to, k) for k in range(sender + to)], np.int16).reshape(-1, 3)\n"
        "got = job.alltoall_rows([rows(job.rank, to) for to in range(job.size)])\n"
        "want = np.concatenate([rows(sender, job.rank) for sender in range(job.size)])\n"
        "assert got.dtype == np.int16 and got.shape == want.shape and (got == want).all(), (got, want)\n"
        "print('rows', job.rank, got.shape[0])\n")
    assert done.returncode == 0 and "rows 2 9" in done.stdout, done.stderr


@needs_mpi
def test_a_rank_idle_while_rank_0_works_alone_waits_without_polling(tmp_path):
    done = _mpiexec_script(tmp_path, 2,
        "import time\n"
        "from headrace.distributed import ranks\n"
        "job = ranks()\n"
        "job.barrier()\n"
        "wall, cpu = time.perf_counter(), time.process_time()\n"
        "if job.root:\n"
        "    time.sleep(0.5)  # rank 0 at work alone\n"
        "job.idle_barrier()\n"
        "if not job.root:\n"
        "    print(f'waited {time.perf_counter() - wall:.3f} s, busy {time.process_time() - cpu:.3f} s')\n")
    assert done.returncode == 0, done.stderr
    waited, busy = (float(word) for word in re.findall(r"[\d.]+(?= s)", done.stdout))
    assert waited >= 0.45 and busy < 0.25 * waited, done.stdout


@needs_mpi
def test_play_of_one_frame_on_two_ranks_is_rank_0_alone_and_ends(tmp_path):
    from headrace.generate import generate_volume

    # auto gives one light frame to rank 0 alone; its runs waited at a barrier for the rank that had left.
    volume = generate_volume(tmp_path / "v.hrc", dims=(24, 20, 16), frames=1, seed=5)
    done = _mpiexec(2, "play", str(volume), "--device", "cpu", "--stages", "all", "--render-only", "0", "--width", "48",
                    "--height", "36", "--loops", "2")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "rank 0 alone" in text and "frames/s" in text


@needs_mpi
def test_play_shares_a_volume_series_by_time_and_reports_the_job(tmp_path):
    from headrace.generate import generate_volume

    volume = generate_volume(tmp_path / "v.hrc", dims=(40, 32, 24), frames=6, seed=5)
    done = _mpiexec(2, "play", str(volume), "--device", "cpu", "--stages", "all", "--render-only", "0", "--width", "96",
                    "--height", "72", "--record", str(tmp_path / "run.json"))
    assert done.returncode == 0, done.stderr
    assert "the job: 6 frames by 2 ranks" in " ".join(done.stdout.split())
    record = json.loads((tmp_path / "run.json").read_text())
    job = record["runs"][0]["job"]
    assert job["frames"] == 6 and [r["frames"] for r in job["per_rank"]] == [3, 3]
    assert [f["frame"] for f in record["runs"][0]["frames"]] == [0, 1, 2]  # rank 0's own block


@needs_mpi
def test_bench_scaling_measures_every_workload_at_every_job_size(series, amr, tmp_path):
    out = tmp_path / "scaling"
    done = subprocess.run([sys.executable, "-m", "headrace", "bench", "scaling", str(series), str(amr), "--ranks", "1,2",
                           "--device", "cpu", "--cache", "hot,cold", "--repeats", "1", "--frames", "1", "--hot-bytes", "1M", "--width", "64",
                           "--height", "48", "--out", str(out)], capture_output=True, text=True, timeout=4 * RUN_TIMEOUT_S,
                          env={**os.environ, **AS_ROOT})
    assert done.returncode == 0, done.stderr
    result = json.loads((out / "scaling.json").read_text())
    kinds = sorted((p["workload"], p["file"], p["ranks"], p["cache"]) for p in result["points"])
    expected = sorted([(w, f, n, c) for f in ("s.hrc", "a.hrc") for n in (1, 2)
                       for w, c in (("stream", "hot"), ("stream", "cold"), ("stream-python", "hot"), ("render", "hot"),
                                    ("render-auto", "hot"))] +
                      [("play", "a.hrc", n, "hot") for n in (1, 2)])
    assert kinds == expected
    assert result["ceilings"]["page_cache_memcpy_gbps"] > 0 and result["ceilings"]["pinned_gbps"] == {}  # no GPU
    for p in result["points"]:
        assert (p["gbps"] if p["workload"].startswith("stream") else p["fps"]) > 0
        assert p["over_n_x_one"] == pytest.approx(1.0) if p["ranks"] == 1 else p["over_n_x_one"] > 0
        if p["workload"] == "render":
            assert p["draw_s_median"] > 0 and p["wait_s_median"] >= 0 and p["composite_s_median"] >= 0
            assert p["compositing"] == ("one rank: nothing to composite" if p["ranks"] == 1 else
                                        "host memory over MPI (the ranks draw on the CPU)")
        if p["workload"] == "render-auto":
            assert p["distribution"] == ("one (one rank)" if p["ranks"] == 1 else
                                         "one (drawn on the CPU; one frame: rank 0 alone)")
        if p["workload"] == "stream":  # hot: the series again until 1 MiB has gone
            size = os.path.getsize(series if p["file"] == "s.hrc" else amr)
            assert p["loop"] == (-(-(1 << 20) // size) if p["cache"] == "hot" else 1)
    assert (out / "scaling.csv").read_text().count("\n") == len(result["points"]) + 1
    assert (out / "scaling.png").stat().st_size > 10_000


@needs_mpi
def test_render_auto_draws_a_light_frame_on_rank_0_alone_and_a_series_by_time(series, tmp_path):
    from PIL import Image

    common = ["--device", "cpu", "--width", "80", "--height", "60"]
    subprocess.run([sys.executable, "-m", "headrace", "render", str(series), "--frames", "0:7", "--out", str(tmp_path / "one"),
                    *common], check=True, capture_output=True, timeout=RUN_TIMEOUT_S)
    subprocess.run([sys.executable, "-m", "headrace", "render", str(series), "--frame", "3", "--out", str(tmp_path / "3.png"),
                    *common], check=True, capture_output=True, timeout=RUN_TIMEOUT_S)
    done = _mpiexec(2, "render", str(series), "--frame", "3", "--out", str(tmp_path / "alone.png"), *common)
    assert done.returncode == 0, done.stderr
    assert "2 ranks: one (drawn on the CPU; one frame: rank 0 alone)" in " ".join(done.stdout.split())
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "alone.png")), np.asarray(Image.open(tmp_path / "3.png")))
    done = _mpiexec(3, "render", str(series), "--frames", "0:7", "--out", str(tmp_path / "many"), *common)
    assert done.returncode == 0, done.stderr
    assert "3 ranks: time (7 frames for 3 ranks: each rank its block of whole frames)" in " ".join(done.stdout.split())
    for frame in range(7):  # every rank frames its camera on the series' first frame, as one process does
        name = f"frame_{frame:05d}.png"
        np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "many" / name)),
                                      np.asarray(Image.open(tmp_path / "one" / name)))


def test_auto_distribution_chooses_by_frames_fit_and_measured_load(monkeypatch):
    from headrace.workloads import distribution
    from headrace.workloads.distribution import choose_distribution

    job = Ranks(rank=0, size=4)  # rank 0 decides; without a communicator it keeps its choice
    assert choose_distribution("auto", job, frames=8, frame_bytes=1, device=0).how == "time"
    assert choose_distribution("auto", job, frames=1, frame_bytes=1, device="cpu").how == "one"
    assert choose_distribution("auto", job, frames=3, frame_bytes=1, device="cpu").how == "time"
    assert choose_distribution("sort-last", job, frames=8, frame_bytes=1, device=0).describe() == "sort-last (asked for)"
    assert choose_distribution("auto", Ranks(), frames=1, frame_bytes=1 << 40, device=0).how == "one"
    # A light frame is decided without asking the GPU (it would make a context and time a copy).
    monkeypatch.setattr(distribution._ext, "gpu_memory", lambda device: pytest.fail("asked the GPU"))
    light = choose_distribution("auto", job, frames=1, frame_bytes=int(160e6), elements=5_000_000, device=0)
    assert light.how == "one" and "would save at most 11 ms (loaded at 10 GB/s or faster, 1 ms to draw)" in light.why
    monkeypatch.setattr(distribution._ext, "gpu_memory", lambda device: (80e9, 96e9))
    monkeypatch.setattr(distribution._ext, "pinned_copy_rate", lambda device, size, repeats: 50e9)
    # A frame that fits: its time on one GPU, saved 3/4 times over, against sharing's setup.
    heavy = choose_distribution("auto", job, frames=1, frame_bytes=int(3.2e9), elements=100_000_000, device=0)
    assert heavy.how == "one" and "would save at most 250 ms" in heavy.why  # a 100 M-particle frame: not asked
    large = choose_distribution("auto", job, frames=1, frame_bytes=int(20e9), elements=0, device=0)
    assert large.how == "one" and "(400 ms to load at 50 GB/s, 0 ms to draw)" in large.why
    assert "saves 298 ms, less than its 1.2 s of setup; one frame: rank 0 alone" in large.why
    drawn = choose_distribution("auto", job, frames=3, frame_bytes=int(0.8e9), elements=200_000_000, kind="volume", device=0)
    assert drawn.how == "time" and "at most 341 ms (loaded at 10 GB/s or faster, 74 ms to draw)" in drawn.why  # AMR
    slow = choose_distribution("auto", job, frames=2, frame_bytes=int(40e9), elements=1_250_000_000, device=0)
    assert slow.how == "sort-last" and "more than its 1.2 s of setup" in slow.why
    assert choose_distribution("auto", job, frames=1, frame_bytes=int(100e9), device=0).why.endswith("80.0 GB free")
    assert choose_distribution("auto", job, frames=1, frame_bytes=int(100e9), device=0, sort_last=False).how == "one"
    with pytest.raises(headrace.UsageError, match="shares frames by time only"):
        choose_distribution("sort-last", job, frames=1, frame_bytes=1, device=0, sort_last=False)
    with pytest.raises(headrace.UsageError, match="expected one of auto, one, time, sort-last"):
        choose_distribution("spread", job, frames=1, frame_bytes=1, device=0)


def test_compositing_runs_on_the_host_for_cpu_ranks_and_gpu_compositing_says_what_it_needs():
    from headrace.workloads.compositing import choose_compositing
    from headrace.workloads.particles.sort_last import pick_schedule

    assert choose_compositing(Ranks(), 0, "auto") == (None, "one rank: nothing to composite")
    two = Ranks(rank=0, size=2)
    assert choose_compositing(two, None, "auto") == (None, "host memory over MPI (the ranks draw on the CPU)")
    assert choose_compositing(two, 0, "host") == (None, "host memory over MPI (asked for)")
    with pytest.raises(headrace.UsageError, match="needs the ranks to draw on GPUs"):
        choose_compositing(two, None, "gpu")
    assert pick_schedule(4, 1024, 768) == "direct-send"  # 2.4 MB a message
    assert pick_schedule(64, 1024, 768) == "binary-swap"  # 147 KB a message, 64 a power of two
    assert pick_schedule(6, 256, 256) == "direct-send"  # not a power of two
    assert pick_schedule(2, 64, 64) == "direct-send"  # one partner either way
    assert pick_schedule(8, 1024, 768, nodes=2) == "binary-swap"  # the last round alone crosses the network
    with pytest.raises(headrace.UsageError, match="power of two ranks, not 3"):
        pick_schedule(3, 64, 64, "binary-swap")


def test_a_rank_binds_itself_near_its_gpu_or_to_every_cpu_it_may_use(monkeypatch, tmp_path):
    from headrace import distributed

    before = os.sched_getaffinity(0)
    try:
        monkeypatch.setattr(distributed._ext, "gpu_pci_address", lambda ordinal: "no-such-device")
        said = distributed.bind_near_gpu(0)
        assert said == f"{len(os.sched_getaffinity(0))} CPUs, every CPU (one NUMA node)"
        assert distributed._cpu_list("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
        os.sched_setaffinity(0, {min(before)})
        monkeypatch.setenv("HEADRACE_BIND_NEAR_GPU", "0")
        assert distributed.bind_near_gpu(0) == "left as the launcher bound it (HEADRACE_BIND_NEAR_GPU=0)"
        assert os.sched_getaffinity(0) == {min(before)}
    finally:
        os.sched_setaffinity(0, before)


def _gpus_for_nccl() -> str:
    from headrace import _ext

    if _ext.gpu_count() < 2:
        return f"{_ext.gpu_count()} GPU(s): compositing over NCCL needs a GPU a rank, two at least"
    return _ext.nccl_unavailable_reason()


COMPOSITE_SCRIPT = """
import sys, numpy as np
from headrace.distributed import fail_together
from headrace.workloads.particles.sort_last import ParticleShares
from headrace.workloads.volume.sort_last import VolumeSlabs
path, kind, compositing, schedule, out = sys.argv[1:6]
with fail_together("composite test") as job:
    if kind == "particles":
        painter = ParticleShares(path, device=0, width=320, height=241, camera="orbit:40,25", compositing=compositing,
                                 schedule=schedule)
    else:
        painter = VolumeSlabs(path, device=0, width=320, height=241, camera="orbit:35,25", compositing=compositing,
                              opacity="ramp:0.2,0.9,0.6")
    for frame in (1, 0, 1):  # set up once, drawn again: the compositor's buffers kept across frames
        image, stats = painter.render(frame)
    if job.root:
        np.save(out, image)
        print("COMPOSITING", stats["compositing"], "|", stats.get("schedule", ""))
"""


@needs_mpi
@pytest.mark.gpu
@pytest.mark.parametrize("size", [2, 4])
def test_gpu_compositing_over_nccl_is_the_single_rank_image(cloud, amr, tmp_path, size):
    from headrace import _ext

    if _gpus_for_nccl() or _ext.gpu_count() < size:
        pytest.skip(_gpus_for_nccl() or f"{_ext.gpu_count()} GPUs for {size} ranks")
    script = tmp_path / "composite.py"
    script.write_text(COMPOSITE_SCRIPT)
    assert MPIEXEC is not None

    def run(ranks_asked: int, path, kind: str, compositing: str, schedule: str = "auto") -> tuple[np.ndarray, str]:
        out = tmp_path / f"{kind}-{ranks_asked}-{compositing}-{schedule}.npy"
        command = [sys.executable, str(script), str(path), kind, compositing, schedule, str(out)]
        done = subprocess.run(([MPIEXEC, "-n", str(ranks_asked)] if ranks_asked > 1 else []) + command, capture_output=True,
                              text=True, timeout=RUN_TIMEOUT_S, env={**os.environ, **AS_ROOT, "NCCL_NVLS_ENABLE": "0"})
        assert done.returncode == 0, done.stderr[-3000:]
        return np.load(out), done.stdout

    one, _ = run(1, cloud, "particles", "auto")
    assert (one[..., :3] > 0).any(axis=2).mean() > 0.05
    for schedule in ("direct-send", "binary-swap"):
        many, said = run(size, cloud, "particles", "gpu", schedule)
        assert f"COMPOSITING GPU over NCCL" in said and f"| {schedule}" in said
        np.testing.assert_array_equal(many, one)  # a key decides a pixel alone: bit for bit
    one_volume, _ = run(1, amr, "volume", "auto")
    on_gpu, said = run(size, amr, "volume", "gpu")
    on_host, _ = run(size, amr, "volume", "host")
    assert "COMPOSITING GPU over NCCL" in said
    np.testing.assert_array_equal(on_gpu, on_host)  # the same math, the same order: the host path's bits
    off, most = _channels_off(on_gpu, one_volume)
    assert off <= 0.002, f"{off:.2%} of the channels differ from one rank's by more than 2 levels (most {most})"


@needs_mpi
def test_play_can_share_each_frame_by_slabs_and_reports_the_job(amr, tmp_path):
    done = _mpiexec(2, "play", str(amr), "--device", "cpu", "--stages", "all", "--render-only", "0", "--width", "64",
                    "--height", "48", "--distribute", "sort-last", "--loops", "2", "--record", str(tmp_path / "run.json"))
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stdout.split())
    assert "2 ranks: sort-last (asked for)" in said
    assert "4 frames by 2 ranks, a slab each (host memory over MPI (the ranks draw on the CPU))" in said
    run = json.loads((tmp_path / "run.json").read_text())["runs"][0]
    assert [f["frame"] for f in run["frames"]] == [0, 1, 0, 1] and run["fps"] > 0
    assert run["job"] == {"ranks": 2, "frames": 4, "seconds": run["seconds"]}
    done = _mpiexec(2, "play", str(amr), "--device", "cpu", "--stages", "baseline", "--render-only", "0",
                    "--distribute", "sort-last")
    assert done.returncode != 0 and "--distribute sort-last plays the stage all" in done.stderr


@needs_mpi
def test_a_video_under_mpi_is_drawn_and_written_by_one_rank(series, tmp_path):
    common = ["--frames", "0:4", "--device", "cpu", "--width", "40", "--height", "30"]
    done = _mpiexec(2, "render", str(series), "--out", str(tmp_path / "frames"), "--video", str(tmp_path / "v.gif"), *common)
    assert done.returncode == 0, done.stderr
    assert "2 ranks: one (--video: one rank writes the animation)" in " ".join(done.stdout.split())
    from PIL import Image

    assert Image.open(tmp_path / "v.gif").n_frames == 4
    done = _mpiexec(2, "render", str(series), "--out", str(tmp_path / "f2"), "--video", str(tmp_path / "w.gif"),
                    "--distribute", "time", *common)
    assert done.returncode == 2 and "--video with --distribute time: one animation is written by one rank" in done.stderr
    assert not (tmp_path / "w.gif").exists()
