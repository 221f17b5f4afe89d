"""Measures how headrace scales over 1, 2, 4, 8 MPI ranks: aggregate GB/s, frames per second and the
compositing cost.

    headrace bench scaling PARTICLES.hrc VOLUME.hrc [--ranks 1,2,4,8] [--device 0] [--cache hot,cold] --out DIR

Each point is a job of its own (``mpiexec -n N``; one process for N = 1 is a job of one rank), run the way a
user runs it:

- ``stream`` (every file): ``headrace stream FILE --device D --json``, the command's defaults, each rank its
  block of frames into its GPU (``--device cpu``: host memory); the job's bytes delivered over its slowest
  rank's time. Hot: the file read once first, the series played ``--loop`` times, about ``--hot-bytes``;
  cold: evicted (``drop-all``: the machine's page cache dropped, root) before each repeat, played once;
- ``stream-python`` (every file, hot): one process a GPU, each streaming the whole file into its GPU with
  ``ds.stream(device=d)`` (the Python API's defaults) about ``--hot-bytes``, started together: every
  process's bytes over the slowest one's time (what the command's MPI path is held to);
- ``render`` (every file): :class:`ParticleShares` or :class:`VolumeSlabs` (set up once, as the command
  does) drawing ``--frames`` frames, one after the other, every rank its share of each frame, composited
  on rank 0 by each ``--compositing`` (``auto``: the GPUs over NCCL where they can; ``host``: through host
  memory over MPI): frames per second over the job's time, and per frame the slowest rank's load and draw
  times, its wait for the others (a barrier before compositing) and the compositing itself;
- ``render-auto`` (every file): the same frames as ``mpirun -n N headrace render FILE --frame F`` with its
  defaults (``--distribute auto``) takes them: sort-last, or rank 0 alone, as it chooses (recorded);
- ``play`` (volume files): ``headrace play FILE --stages all --render-only 0 --loops L --record``, each rank its
  block of frames (``--play-loops`` L times: a short series is mostly its first frame, which fills each
  rank's pipeline): the job's frames over its slowest rank's time.

The host's ceilings are measured in the same call, once per job size: ``pinned`` (N processes, one a GPU,
copying from page-locked buffers at once: the most a hot stream can deliver) and ``page-cache-memcpy``
(threads copying a hot file's pages out of the page cache: what a path that copies before it DMAs is
held to). Each stream point is stated against min(N x the one-rank point, the pinned ceiling at N).

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
from headrace.distributed import Ranks, fail_together, ranks
from headrace.errors import UsageError
from headrace.workloads.compositing import COMPOSITING
from headrace.workloads.distribution import choose_distribution, frame_work
from headrace.workloads.particles.sort_last import ParticleShares
from headrace.workloads.volume import VolumeSlabs, is_volume

__all__ = ["main", "run_study", "worker_render"]

MOST_LOOPS = 10_000  # headrace stream --loop
WORKLOADS = ("stream", "stream-python", "render", "render-auto", "play")
RESULT = "SCALING-RESULT "  # rank 0's line of a worker's output
# Open MPI starts more ranks than cores only when told; as root only when told twice. MPICH ignores these.
MPI_ENVIRONMENT = {"OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_ALLOW_RUN_AS_ROOT": "1",
                   "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def worker_render(path: str, device: str, frames: int, width: int, height: int, compositing: str = "auto",
                  distribute: str = "sort-last") -> dict[str, Any] | None:
    """Under mpiexec: ``frames`` frames drawn by every rank and composited (``distribute`` sort-last), or as
    ``--distribute auto`` chooses for one frame; the job's numbers on rank 0."""
    job = ranks()
    ds = headrace.open(path)
    given: int | str = "cpu" if device == "cpu" else int(device)
    chosen = [f % len(ds.frames) for f in range(frames)]
    spread = choose_distribution(distribute, job, frames=1, device=job.device(given), **frame_work(ds, chosen[:1], is_volume(ds)))
    if spread.how != "sort-last" and job.size > 1:  # rank 0 draws whole frames, the others idle
        return _worker_alone(ds, given, chosen, width, height, spread.describe())
    painter = _painter(ds, given, width, height, compositing, job)
    painter.render(chosen[0])  # first touch (and NCCL's connections), not timed
    per_frame = []
    job.barrier()
    watch = Stopwatch()
    for frame in chosen:
        _, stats = painter.render(frame)
        per_frame.append(job.gather(stats))
    job.barrier()
    seconds = watch.seconds()
    if not job.root:
        return None
    slowest = {key: [max(s[key] for s in everyone) for everyone in per_frame]  # type: ignore[union-attr]
               for key in ("load_s", "draw_s", "wait_s", "composite_s")}
    by_rank = {f"{key}_by_rank": [statistics.median(everyone[r][key] for everyone in per_frame)  # type: ignore[index]
                                  for r in range(job.size)] for key in ("load_s", "draw_s")}
    return {"ranks": job.size, "frames": len(chosen), "seconds": seconds, "fps": len(chosen) / seconds,
            "compositing": painter.compositing, "schedule": getattr(painter, "schedule", "direct-send"),
            "distribution": spread.describe(), **by_rank,
            **{f"{key}_median": statistics.median(values) for key, values in slowest.items()}}


def _painter(ds: Any, device: int | str, width: int, height: int, compositing: str, job: Ranks) -> Any:
    """The sort-last renderer of the file's kind for ``job``, set up once, as the command sets it up."""
    kind = VolumeSlabs if is_volume(ds) else ParticleShares
    return kind(ds, device=device, width=width, height=height, compositing=compositing, job=job)


def _worker_alone(ds: Any, device: int | str, frames: list[int], width: int, height: int, chosen: str) -> dict[str, Any] | None:
    """Rank 0 draws the frames whole (a one-rank job's renderer, set up once), the other ranks wait."""
    job = ranks()
    result = None
    if job.root:
        whole = _painter(ds, device, width, height, "auto", Ranks())  # a job of its own: its share is the whole frame
        whole.render(frames[0])
        watch = Stopwatch()
        drawn = [whole.render(frame)[1] for frame in frames]
        seconds = watch.seconds()
        result = {"ranks": job.size, "frames": len(frames), "seconds": seconds, "fps": len(frames) / seconds,
                  "compositing": "none", "schedule": "none", "distribution": chosen, "cpus": len(os.sched_getaffinity(0)),
                  **{f"{key}_median": statistics.median(s[key] for s in drawn) for key in ("load_s", "draw_s", "composite_s")},
                  "wait_s_median": 0.0}
    job.idle_barrier()  # the other ranks wait without polling, as a command's idle ranks wait in MPI_Finalize
    return result


def worker_stream(path: str, device: str, loop: int) -> dict[str, Any] | None:
    """Under mpiexec: every rank streams the whole file ``loop`` times into its GPU with ``ds.stream`` (one
    process a GPU, the Python API's defaults), all starting together; the job's rate on rank 0."""
    job = ranks()
    ds = headrace.open(path)
    target = job.device("cpu" if device == "cpu" else int(device))
    stream = ds.stream(device=target, loop=loop)
    delivered = 0
    job.barrier()
    watch = Stopwatch()
    for frame in stream:
        if target != "cpu":
            frame.wait()
        delivered += stream.history[-1].raw_bytes
        frame.release()
    seconds = watch.seconds()
    stream.close()
    everyone = job.gather((delivered, seconds))
    if everyone is None:
        return None
    slowest = max(s for _, s in everyone)
    total = sum(b for b, _ in everyone)
    return {"gbps": total / slowest / 1e9, "seconds": slowest, "bytes": total}


PINNED_BYTES = 1 << 30
PINNED_COPIES = 8


def worker_ceiling(device: str) -> dict[str, Any] | None:
    """Under mpiexec: every rank copies PINNED_COPIES x 1 GiB from page-locked memory into its GPU, all at
    once (after a barrier); the job's bytes over the slowest rank's time on rank 0."""
    job = ranks()
    copies = _ext.PinnedCopies(int(job.device(int(device))), PINNED_BYTES)  # type: ignore[arg-type]
    copies.run(1)
    job.barrier()
    seconds = copies.run(PINNED_COPIES)
    everyone = job.gather(seconds)
    if everyone is None:
        return None
    return {"gbps": job.size * PINNED_COPIES * PINNED_BYTES / max(everyone) / 1e9, "seconds": max(everyone)}


def page_cache_memcpy_gbps(path: str, threads: int) -> float:
    """Threads copying a hot file's pages (mapped) into memory of their own: the best of three passes."""
    import mmap
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    warm_page_cache([path])
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        source = np.frombuffer(mapped, dtype=np.uint8)
        edges = np.linspace(0, source.size, threads + 1, dtype=np.int64)
        bounds = [(int(low), int(high)) for low, high in zip(edges[:-1], edges[1:]) if high > low]
        target = np.empty_like(source)

        def copy(bound: tuple[int, int]) -> None:
            np.copyto(target[bound[0]:bound[1]], source[bound[0]:bound[1]])

        best = 0.0
        with ThreadPoolExecutor(threads) as pool:
            for _ in range(3):
                watch = Stopwatch()
                list(pool.map(copy, bounds))
                best = max(best, source.size / watch.seconds() / 1e9)
        del source, target
    return best


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


def _worker(ranks: int, timeout: float, *arguments: str) -> dict[str, Any]:
    out = _run(["-m", "headrace.bench.cases.scaling", *arguments], ranks, timeout)
    lines = [line for line in out.splitlines() if line.startswith(RESULT)]
    if not lines:
        raise RuntimeError(f"the worker ({' '.join(arguments)}) said no result: {out[-2000:]}")
    return json.loads(lines[-1][len(RESULT):])


def _render(path: str, ranks: int, device: str, frames: int, width: int, height: int, timeout: float,
            compositing: str = "auto", distribute: str = "sort-last") -> dict[str, Any]:
    return _worker(ranks, timeout, "--worker", path, "--device", device, "--frames", str(frames), "--width", str(width),
                   "--height", str(height), "--compositing", compositing, "--distribute", distribute)


def _play(path: str, ranks: int, device: str, width: int, height: int, timeout: float, loops: int = 1) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        record = Path(folder) / "run.json"
        _run(["-m", "headrace", "play", path, "--device", device, "--stages", "all", "--render-only", "0", "--width",
              str(width), "--height", str(height), "--loops", str(loops), "--record", str(record)], ranks, timeout)
        run = json.loads(record.read_text())["runs"][0]
    job = run.get("job") or {"frames": run["frames_shown"], "seconds": run["seconds"]}
    return {"fps": job["frames"] / job["seconds"] if job["seconds"] else 0.0, "frames": job["frames"], "seconds": job["seconds"]}


def run_study(files: list[str], ranks: list[int], device: str, caches: list[str], frames: int, repeats: int,
              width: int, height: int, hot_bytes: int = 8 << 30, timeout: float = 600.0, say=print,
              compositing: tuple[str, ...] = ("auto",), workloads: tuple[str, ...] = WORKLOADS, play_loops: int = 1) -> dict[str, Any]:
    """The host's ceilings, then every point, ``repeats`` times each; the median repeat is the point's value."""
    gpus = _gpus()
    points: list[dict[str, Any]] = []
    ceilings: dict[str, Any] = {"pinned_gbps": {}, "page_cache_memcpy_gbps": None}
    if device != "cpu":
        for n in ranks:
            runs = sorted(_worker(n, timeout, "--ceiling", "--device", device)["gbps"] for _ in range(repeats))
            ceilings["pinned_gbps"][n] = runs[len(runs) // 2]
            say(f"ceiling pinned H2D, {n} GPU(s) at once: {ceilings['pinned_gbps'][n]:.1f} GB/s")
    threads = min(32, os.cpu_count() or 1)
    ceilings["page_cache_memcpy_gbps"] = page_cache_memcpy_gbps(max(files, key=os.path.getsize), threads)
    ceilings["page_cache_memcpy_threads"] = threads
    say(f"ceiling memcpy out of the page cache, {threads} threads: {ceilings['page_cache_memcpy_gbps']:.1f} GB/s")

    def record(workload: str, path: str, n: int, cache: str, runs: list[dict[str, Any]], key: str) -> None:
        middle = sorted(runs, key=lambda r: r[key])[len(runs) // 2]
        points.append({"workload": workload, "file": Path(path).name, "ranks": n, "gpus": gpus, "cache": cache,
                       "repeats": [r[key] for r in runs], **middle})
        # Each point said in full as it comes: a study cut at a deadline still leaves its numbers in the log.
        detail = "".join(f", {name} {middle[field] * 1e3:.2f} ms" for name, field in
                         (("load", "load_s_median"), ("draw", "draw_s_median"), ("composite", "composite_s_median"))
                         if middle.get(field))
        if len(middle.get("draw_s_by_rank", ())) > 1:  # where the slowest rank's time goes
            detail += "; by rank: " + ", ".join(f"{load * 1e3:.1f}+{draw * 1e3:.1f}" for load, draw in
                                               zip(middle["load_s_by_rank"], middle["draw_s_by_rank"])) + " ms load+draw"
        if "cpus" in middle:
            detail += f" on {middle['cpus']} CPUs"
        chosen = f", {middle['distribution']}" if middle.get("distribution") else ""
        say(f"{workload:7s} {Path(path).name} ranks {n} {cache}: {key} {middle[key]:.3f}{detail}{chosen}")

    for path in files:
        volume = is_volume(headrace.open(path))
        for n in ranks:
            for cache in caches if "stream" in workloads else ():
                runs = []
                # Hot: the series played until about hot_bytes have gone (a job of a few ms times little but
                # its start); cold: once, each frame read from the disk once.
                loop = min(MOST_LOOPS, max(1, -(-hot_bytes // os.path.getsize(path)))) if cache == "hot" else 1
                for _ in range(repeats):
                    method = warm_page_cache([path]) if cache == "hot" else uncache([path], cache)
                    runs.append({**_stream(path, n, device, loop, timeout), "cache_method": method, "loop": loop})
                record("stream", path, n, cache, runs, "gbps")
            warm_page_cache([path])
            hot_loop = min(MOST_LOOPS, max(1, -(-hot_bytes // os.path.getsize(path))))
            if "stream-python" in workloads:
                record("stream-python", path, n, "hot", [_worker(n, timeout, "--stream", path, "--device", device, "--loop",
                                                                 str(hot_loop)) for _ in range(repeats)], "gbps")
            for how in compositing if "render" in workloads else ():
                record("render" if how == "auto" else f"render-{how}", path, n, "hot",
                       [_render(path, n, device, frames, width, height, timeout, how) for _ in range(repeats)], "fps")
            if "render-auto" in workloads:
                record("render-auto", path, n, "hot",
                       [_render(path, n, device, frames, width, height, timeout, "auto", "auto") for _ in range(repeats)], "fps")
            if volume and "play" in workloads:
                record("play", path, n, "hot", [{**_play(path, n, device, width, height, timeout, play_loops), "loops": play_loops}
                                                for _ in range(repeats)], "fps")
    for p in points:  # against N x the one-rank point of the same workload, file and cache
        one = next((q for q in points if q["ranks"] == 1 and all(q[k] == p[k] for k in ("workload", "file", "cache"))), None)
        key = "gbps" if p["workload"].startswith("stream") else "fps"
        p["over_n_x_one"] = p[key] / (p["ranks"] * one[key]) if one and one[key] else None
        ceiling = ceilings["pinned_gbps"].get(p["ranks"])
        if key == "gbps" and p["cache"] == "hot" and one and ceiling:
            p["ceiling_gbps"] = min(p["ranks"] * one[key], ceiling)
            p["over_ceiling"] = p[key] / p["ceiling_gbps"]
    return {"device": device, "gpus": gpus, "ranks": ranks, "frames": frames, "width": width, "height": height,
            "repeats": repeats, "hot_bytes": hot_bytes, "ceilings": ceilings, "points": points}


def plot(result: dict[str, Any], path: str) -> None:
    # Deferred: matplotlib is optional and slow to import; only the plot needs it.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = result["points"]
    figure, (rate, fps, split) = plt.subplots(1, 3, figsize=(15, 4.2))
    streams = sorted({(p["workload"], p["file"], p["cache"]) for p in points if p["workload"].startswith("stream")})
    for (workload, file, cache) in streams:
        row = sorted((p for p in points if p["workload"] == workload and p["file"] == file and p["cache"] == cache),
                     key=lambda p: p["ranks"])
        n = [p["ranks"] for p in row]
        line = rate.plot(n, [p["gbps"] for p in row], "o-", label=f"{workload} {file} {cache}")[0]
        rate.plot(n, [row[0]["gbps"] * k / row[0]["ranks"] for k in n], ":", color=line.get_color())
    pinned = result.get("ceilings", {}).get("pinned_gbps", {})
    if pinned:
        n = sorted(int(k) for k in pinned)
        rate.plot(n, [pinned[k] if k in pinned else pinned[str(k)] for k in n], "k--", label="pinned H2D, N GPUs at once")
    rate.set(xlabel="ranks", ylabel="GB/s delivered (the job)", title="stream (dotted: N x one rank)")
    for (workload, file) in sorted({(p["workload"], p["file"]) for p in points if not p["workload"].startswith("stream")}):
        row = sorted((p for p in points if p["workload"] == workload and p["file"] == file), key=lambda p: p["ranks"])
        fps.plot([p["ranks"] for p in row], [p["fps"] for p in row], "o-", label=f"{workload} {file}")
    fps.set(xlabel="ranks", ylabel="frames/s", title="render (sort-last) and play (by time)")
    renders = sorted((p for p in points if p["workload"].startswith("render") and p["workload"] != "render-auto"),
                     key=lambda p: (p["file"], p["workload"], p["ranks"]))
    labels = [f"{p['file']}\n{p['workload'][7:] or 'auto'} {p['ranks']}" for p in renders]
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
    parser.add_argument("--stream", metavar="FILE", help=argparse.SUPPRESS)
    parser.add_argument("--ceiling", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--loop", type=int, default=1)
    parser.add_argument("--compositing", choices=COMPOSITING, default="auto")
    parser.add_argument("--distribute", default="sort-last")
    parser.add_argument("--device", default="0")
    parser.add_argument("--frames", type=int, default=4)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--height", type=int, default=768)
    args = parser.parse_args(argv)
    if not (args.worker or args.stream or args.ceiling):
        parser.error("run the study as headrace bench scaling")
    with fail_together("bench scaling"):
        if args.ceiling:
            result = worker_ceiling(args.device)
        elif args.stream:
            result = worker_stream(args.stream, args.device, args.loop)
        else:
            result = worker_render(args.worker, args.device, args.frames, args.width, args.height, args.compositing,
                                   args.distribute)
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
