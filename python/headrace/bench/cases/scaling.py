"""Measures how headrace scales over 1, 2, 4, 8 MPI ranks: aggregate GB/s, frames per second and the
compositing cost.

    headrace bench scaling PARTICLES.hrc VOLUME.hrc [--ranks 1,2,4,8] [--device 0] [--cache hot,cold] --out DIR

Each point is a job of its own (``mpiexec -n N``; one process for N = 1 is a job of one rank), run the way a
user runs it:

- ``stream`` (every file): ``headrace stream FILE --device D --json``, the command's defaults, each rank its
  block of frames into its GPU (``--device cpu``: host memory); the job's bytes delivered over its slowest
  rank's time. Hot: the file read once first, the series played ``--loop`` times, about ``--hot-bytes``;
  cold: evicted (``drop-all``: the machine's page cache dropped, root) before each repeat, played once;
- ``render`` (every file): ``headrace.workloads.particles.sort_last.render_particles`` or ``headrace.workloads.volume.sort_last.render_volume`` of ``--frames``
  frames, one after the other, every rank its share of each frame, composited on rank 0: frames per
  second over the job's time, and per frame the slowest rank's load and draw times, its wait for the
  others (a barrier before compositing) and the compositing itself;
- ``play`` (volume files): ``headrace play FILE --stages all --render-only 0 --record``, each rank its block
  of frames: the job's frames over its slowest rank's time.

Ranks take GPUs by local rank (``headrace.distributed``); on a machine with fewer GPUs than ranks they
share them, so only a machine of N GPUs says how headrace scales to N GPUs: ``scaling.json`` records the
GPUs each job saw. Writes ``scaling.json``, ``scaling.csv`` and ``scaling.png`` (aggregate GB/s against
N x the one-rank rate, frames per second, compositing against drawing) under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import headrace
from headrace import _ext
from headrace._files import replacing
from headrace.bench.harness import Stopwatch, uncache, warm_page_cache, write_rows
from headrace.distributed import fail_together, ranks
from headrace.errors import UsageError
from headrace.workloads.particles.sort_last import render_particles
from headrace.workloads.volume import VolumeSlabs, is_volume

__all__ = ["main", "run_study", "worker_render"]

MOST_LOOPS = 10_000  # headrace stream --loop
RESULT = "SCALING-RESULT "  # rank 0's line of a worker's output
# Open MPI starts more ranks than cores only when told; as root only when told twice. MPICH ignores these.
MPI_ENVIRONMENT = {"OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_ALLOW_RUN_AS_ROOT": "1",
                   "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def worker_render(path: str, device: str, frames: int, width: int, height: int) -> dict[str, Any] | None:
    """Under mpiexec: ``frames`` frames drawn by every rank and composited; the job's numbers on rank 0."""
    job = ranks()
    ds = headrace.open(path)
    given: int | str = "cpu" if device == "cpu" else int(device)
    if is_volume(ds):
        slabs = VolumeSlabs(ds, device=given, width=width, height=height)  # set up once, as the CLI does
        draw = slabs.render
    else:
        def draw(frame: int) -> tuple[Any, dict[str, Any]]:
            return render_particles(ds, frame, device=given, width=width, height=height)
    chosen = [f % len(ds.frames) for f in range(frames)]
    draw(chosen[0])  # first touch, not timed
    per_frame = []
    job.barrier()
    watch = Stopwatch()
    for frame in chosen:
        _, stats = draw(frame)
        per_frame.append(job.gather(stats))
    job.barrier()
    seconds = watch.seconds()
    if not job.root:
        return None
    slowest = {key: [max(s[key] for s in everyone) for everyone in per_frame]  # type: ignore[union-attr]
               for key in ("load_s", "draw_s", "wait_s", "composite_s")}
    return {"ranks": job.size, "frames": len(chosen), "seconds": seconds, "fps": len(chosen) / seconds,
            **{f"{key}_median": statistics.median(values) for key, values in slowest.items()}}


def _gpus() -> int:
    return int(_ext.gpu_count())


def _mpiexec(ranks: int) -> list[str]:
    launcher = shutil.which("mpiexec")
    if launcher is None:
        raise UsageError("no mpiexec: install an MPI (scripts/setup.sh installs Debian's MPICH) to run several ranks")
    return [launcher, "-n", str(ranks)]


def _run(command: list[str], ranks: int, timeout: float) -> str:
    full = (_mpiexec(ranks) if ranks > 1 else []) + [sys.executable, *command]
    done = subprocess.run(full, capture_output=True, text=True, timeout=timeout, env={**os.environ, **MPI_ENVIRONMENT})
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(full)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done.stdout


def _stream(path: str, ranks: int, device: str, loop: int, timeout: float) -> dict[str, Any]:
    out = json.loads(_run(["-m", "headrace", "stream", path, "--device", device, "--loop", str(loop), "--json"], ranks,
                          timeout))
    job = out.get("job", out)  # one rank prints its own summary
    return {"gbps": job["delivered_gbps"], "seconds": job["seconds"], "bytes": job["raw_bytes"],
            "bytes_from_disk": job["bytes_from_disk"], "frames": job["frames"]}


def _render(path: str, ranks: int, device: str, frames: int, width: int, height: int, timeout: float) -> dict[str, Any]:
    out = _run(["-m", "headrace.bench.cases.scaling", "--worker", path, "--device", device, "--frames", str(frames),
                "--width", str(width), "--height", str(height)], ranks, timeout)
    lines = [line for line in out.splitlines() if line.startswith(RESULT)]
    if not lines:
        raise RuntimeError(f"the render worker said no result: {out[-2000:]}")
    return json.loads(lines[-1][len(RESULT):])


def _play(path: str, ranks: int, device: str, width: int, height: int, timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        record = Path(folder) / "run.json"
        _run(["-m", "headrace", "play", path, "--device", device, "--stages", "all", "--render-only", "0", "--width",
              str(width), "--height", str(height), "--record", str(record)], ranks, timeout)
        run = json.loads(record.read_text())["runs"][0]
    job = run.get("job") or {"frames": run["frames_shown"], "seconds": run["seconds"]}
    return {"fps": job["frames"] / job["seconds"] if job["seconds"] else 0.0, "frames": job["frames"], "seconds": job["seconds"]}


def run_study(files: list[str], ranks: list[int], device: str, caches: list[str], frames: int, repeats: int,
              width: int, height: int, hot_bytes: int = 8 << 30, timeout: float = 600.0, say=print) -> dict[str, Any]:
    """Every point, ``repeats`` times each; the median repeat is the point's value."""
    gpus = _gpus()
    points: list[dict[str, Any]] = []

    def record(workload: str, path: str, n: int, cache: str, runs: list[dict[str, Any]], key: str) -> None:
        middle = sorted(runs, key=lambda r: r[key])[len(runs) // 2]
        points.append({"workload": workload, "file": Path(path).name, "ranks": n, "gpus": gpus, "cache": cache,
                       "repeats": [r[key] for r in runs], **middle})
        say(f"{workload:7s} {Path(path).name} ranks {n} {cache}: {key} {middle[key]:.3f}")

    for path in files:
        volume = is_volume(headrace.open(path))
        for n in ranks:
            for cache in caches:
                runs = []
                # Hot: the series played until about hot_bytes have gone (a job of a few ms times little but
                # its start); cold: once, each frame read from the disk once.
                loop = min(MOST_LOOPS, max(1, -(-hot_bytes // os.path.getsize(path)))) if cache == "hot" else 1
                for _ in range(repeats):
                    method = warm_page_cache([path]) if cache == "hot" else uncache([path], cache)
                    runs.append({**_stream(path, n, device, loop, timeout), "cache_method": method, "loop": loop})
                record("stream", path, n, cache, runs, "gbps")
            warm_page_cache([path])
            record("render", path, n, "hot", [_render(path, n, device, frames, width, height, timeout) for _ in range(repeats)],
                   "fps")
            if volume:
                record("play", path, n, "hot", [_play(path, n, device, width, height, timeout) for _ in range(repeats)], "fps")
    for p in points:  # against N x the one-rank point of the same workload, file and cache
        one = next((q for q in points if q["ranks"] == 1 and all(q[k] == p[k] for k in ("workload", "file", "cache"))), None)
        key = "gbps" if p["workload"] == "stream" else "fps"
        p["over_n_x_one"] = p[key] / (p["ranks"] * one[key]) if one and one[key] else None
    return {"device": device, "gpus": gpus, "ranks": ranks, "frames": frames, "width": width, "height": height,
            "repeats": repeats, "hot_bytes": hot_bytes, "points": points}


def plot(result: dict[str, Any], path: str) -> None:
    # Deferred: matplotlib is optional and slow to import; only the plot needs it.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = result["points"]
    figure, (rate, fps, split) = plt.subplots(1, 3, figsize=(15, 4.2))
    for (file, cache) in sorted({(p["file"], p["cache"]) for p in points if p["workload"] == "stream"}):
        row = sorted((p for p in points if p["workload"] == "stream" and p["file"] == file and p["cache"] == cache),
                     key=lambda p: p["ranks"])
        n = [p["ranks"] for p in row]
        line = rate.plot(n, [p["gbps"] for p in row], "o-", label=f"{file} {cache}")[0]
        rate.plot(n, [row[0]["gbps"] * k / row[0]["ranks"] for k in n], ":", color=line.get_color())
    rate.set(xlabel="ranks", ylabel="GB/s delivered (the job)", title="stream (dotted: N x one rank)")
    for (workload, file) in sorted({(p["workload"], p["file"]) for p in points if p["workload"] != "stream"}):
        row = sorted((p for p in points if p["workload"] == workload and p["file"] == file), key=lambda p: p["ranks"])
        fps.plot([p["ranks"] for p in row], [p["fps"] for p in row], "o-", label=f"{workload} {file}")
    fps.set(xlabel="ranks", ylabel="frames/s", title="render (sort-last) and play (by time)")
    renders = sorted((p for p in points if p["workload"] == "render"), key=lambda p: (p["file"], p["ranks"]))
    labels = [f"{p['file']}\n{p['ranks']}" for p in renders]
    bottom = [0.0] * len(renders)
    for key, name in (("load_s_median", "load"), ("draw_s_median", "draw"), ("wait_s_median", "wait"),
                      ("composite_s_median", "composite")):
        values = [p[key] * 1e3 for p in renders]
        split.bar(range(len(renders)), values, bottom=bottom, label=name)
        bottom = [b + v for b, v in zip(bottom, values)]
    split.set_xticks(range(len(renders)), labels, fontsize=7)
    split.set(ylabel="ms per frame (slowest rank)", title="render: load, draw, wait, composite")
    for axes in (rate, fps):
        axes.set_xticks(result["ranks"])
    for axes in (rate, fps, split):
        axes.legend(fontsize=7)
    figure.suptitle(f"headrace over MPI: device {result['device']}, {result['gpus']} GPU(s) on the machine")
    figure.tight_layout()
    figure.savefig(path, dpi=110, format="png")
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--worker", metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--device", default="0")
    parser.add_argument("--frames", type=int, default=4)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--height", type=int, default=768)
    args = parser.parse_args(argv)
    if not args.worker:
        parser.error("run the study as headrace bench scaling")
    with fail_together("bench scaling"):
        result = worker_render(args.worker, args.device, args.frames, args.width, args.height)
    if result is not None:
        print(RESULT + json.dumps(result), flush=True)
    return 0


def write(result: dict[str, Any], out: Path) -> list[Path]:
    """scaling.json, scaling.csv and scaling.png under ``out``, each through a temporary file and a rename."""
    out.mkdir(parents=True, exist_ok=True)
    with replacing(str(out / "scaling.json")) as partial:
        Path(partial).write_text(json.dumps(result, indent=1))
    write_rows(str(out / "scaling.csv"), [{k: v for k, v in p.items() if k != "repeats"} for p in result["points"]])
    with replacing(str(out / "scaling.png")) as partial:
        plot(result, partial)
    return [out / "scaling.json", out / "scaling.csv", out / "scaling.png"]


if __name__ == "__main__":
    raise SystemExit(main())
