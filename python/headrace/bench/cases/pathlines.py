"""Measures pathlines as users run them against the engine streaming the same frames, each pass in a fresh
process, hot (the series in the page cache) or cold (caches dropped before each pass):

- engine: ``ds.stream(device=D, stored_order=True)`` over every frame's velocity, the clock from the call until
  the GPU holds the last frame: the series' bytes per second the engine reaches;
- api: ``trace_pathlines(FILE, seeds, step_size=S, device=D)`` with every other default, the clock around the
  call (its setup and first frame counted): the tracer's seconds, its stepping alone (``advance``: the kernels
  on resident frames) and its waits for frames;
- cli: ``headrace trace FILE --pathlines --seeds uniform:N --step-size S --device D --out PATHS.npz``, the wall
  of the whole command (interpreter, setup, writing the paths).

Each round runs the three in turn. The yardstick of a hot pass is the larger of (the series' bytes at the
engine's rate of the same round) and (the stepping alone); of a cold one, the series' bytes at the disk's
rate (``--disk-gbps``, fio's of the same call, else the engine's cold rate). Writes ``pathlines.csv`` and
``pathlines.json`` under ``--out`` and prints the table.

    headrace bench pathlines SERIES --step-size 0.05 --device 0 --out DIR    # a million seeds by default
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import headrace
from headrace.bench.harness import drop_page_cache, warm_page_cache, write_rows

__all__ = ["main", "measure"]


def _engine_pass(path: str, device: str) -> dict[str, Any]:
    """Every frame's velocity streamed to ``device`` as stored; the clock stops once the GPU holds the last."""
    started = time.perf_counter()
    ds = headrace.open(path)
    raw = 0
    with ds.stream(["velocity"], device=None if device == "cpu" else int(device), stored_order=True) as frames:
        for frame in frames:
            raw += frame["velocity"].nbytes
    if device != "cpu":
        import cupy  # type: ignore[import]  # GPU machines only

        cupy.cuda.Device(int(device)).synchronize()
    return {"seconds": time.perf_counter() - started, "bytes": raw}


def _api_pass(path: str, device: str, seeds: int, step_size: float, cache_bytes: int | None) -> dict[str, Any]:
    """The tracer with every default but the seeds, the step and the device (and the cache where asked),
    timed around the call."""
    from headrace.workloads import streamlines

    started = time.perf_counter()
    lattice = streamlines.uniform_seeds(path, seeds)
    sized: dict[str, Any] = {} if cache_bytes is None else {"cache_bytes": cache_bytes}
    result = streamlines.trace_pathlines(path, lattice, step_size=step_size, device=device, **sized)
    wall = time.perf_counter() - started
    keep = ("seconds", "intervals", "frames_loaded", "whole_frames", "bytes_read", "resident_advance_seconds",
            "resident_load_seconds", "resident_make_seconds", "resident_collect_seconds", "home_seconds", "fault_seconds",
            "resident_rounds", "resident_units_loaded", "resident_evictions", "points", "seeds", "t0", "t1")
    return {"wall": wall, **{k: result.stats[k] for k in keep}, "ends": sorted(set(result.ends))}


def _child(argv: list[str]) -> dict[str, Any]:
    """A pass in a fresh process (so that cold is cold: no page-locked pages of an earlier pass survive)."""
    done = subprocess.run([sys.executable, "-m", "headrace.bench.cases.pathlines", "--child", *argv],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _cli_pass(path: str, device: str, seeds: int, step_size: float, out: str) -> dict[str, Any]:
    started = time.perf_counter()
    done = subprocess.run(["headrace", "trace", path, "--pathlines", "--seeds", f"uniform:{seeds}", "--step-size",
                           str(step_size), "--device", device, "--out", out, "--json"],
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"headrace trace --pathlines: exit {done.returncode}: {done.stderr.strip()[-2000:]}")
    stats = json.loads(done.stdout)
    os.unlink(out)
    return {"wall": wall, "seconds": stats["seconds"], "command_seconds": stats["command_seconds"],
            "write_seconds": stats["write_seconds"], "points": stats["points"]}


def _prepare(path: str, cache: str) -> None:
    if cache == "cold":
        drop_page_cache([path])
    else:
        warm_page_cache([path])


def budget_rows(path: str, *, seeds: int, step_size: float, device: str, cache_bytes: int, rounds: int) -> list[dict[str, Any]]:
    """The tracer with the cache at its default (whole frames) and at ``cache_bytes`` (too small for two frames: the
    units the paths ask for loaded in rounds), hot, each a fresh process: its particle-steps per second in each."""
    rows = []
    for round_number in range(rounds):
        for cache in (None, cache_bytes):
            _prepare(path, "hot")
            api = _child(["api", path, device, str(seeds), str(step_size), str(cache or 0)])
            steps = api["points"] - api["seeds"]
            rows.append({"round": round_number, "cache_bytes": cache or "default", "whole_frames": api["whole_frames"],
                         "seeds": api["seeds"], "steps": steps, "trace_s": api["seconds"],
                         "advance_s": api["resident_advance_seconds"], "load_wait_s": api["resident_load_seconds"],
                         "rounds": api["resident_rounds"], "units_loaded": api["resident_units_loaded"],
                         "bytes": api["bytes_read"], "steps_per_s": steps / api["seconds"]})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def measure(path: str, *, seeds: int, step_size: float, device: str, caches: list[str], rounds: int,
            disk_gbps: float | None, scratch: str) -> dict[str, Any]:
    """Rounds of the three passes per cache state; rows and their medians with the ratios of the module's text."""
    rows: list[dict[str, Any]] = []
    for cache in caches:
        for round_number in range(rounds):
            _prepare(path, cache)
            engine = _child(["engine", path, device])
            _prepare(path, cache)
            api = _child(["api", path, device, str(seeds), str(step_size), "0"])
            _prepare(path, cache)
            cli = _cli_pass(path, device, seeds, step_size, os.path.join(scratch, "paths.npz"))
            engine_gbps = engine["bytes"] / engine["seconds"] / 1e9
            bytes_at_engine = api["bytes_read"] / 1e9 / engine_gbps
            hot_yardstick = max(bytes_at_engine, api["resident_advance_seconds"])
            disk = disk_gbps or engine_gbps
            yardstick = hot_yardstick if cache == "hot" else api["bytes_read"] / 1e9 / disk
            steps = api["points"] - api["seeds"]
            rows.append({
                "cache": cache, "round": round_number, "device": device, "seeds": api["seeds"], "steps": steps,
                "frames": api["frames_loaded"], "intervals": api["intervals"], "bytes": api["bytes_read"],
                "engine_gbps": engine_gbps, "api_wall_s": api["wall"], "trace_s": api["seconds"],
                "advance_s": api["resident_advance_seconds"], "load_wait_s": api["resident_load_seconds"],
                "collect_s": api["resident_collect_seconds"], "home_s": api["home_seconds"], "fault_s": api["fault_seconds"],
                "make_s": api["resident_make_seconds"], "trace_gbps": api["bytes_read"] / 1e9 / api["seconds"],
                "particle_steps_per_s": steps / max(api["resident_advance_seconds"], 1e-9),
                "yardstick_s": yardstick, "trace_vs_yardstick": api["seconds"] / yardstick,
                "api_wall_vs_yardstick": api["wall"] / yardstick, "cli_wall_s": cli["wall"],
                "cli_trace_s": cli["seconds"], "cli_write_s": cli["write_seconds"], "disk_gbps": disk,
                "ends": "/".join(api["ends"]),
            })
            print(json.dumps(rows[-1]), flush=True)
    summary = {}
    for cache in caches:
        mine = [r for r in rows if r["cache"] == cache]
        summary[cache] = {key: statistics.median(r[key] for r in mine)
                          for key in ("engine_gbps", "trace_s", "advance_s", "load_wait_s", "yardstick_s", "trace_vs_yardstick",
                                      "api_wall_vs_yardstick", "particle_steps_per_s", "trace_gbps", "cli_wall_s")}
    return {"file": path, "seeds": seeds, "step_size": step_size, "device": device, "rows": rows, "summary": summary}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        kind, path, device, *rest = argv[1:]
        result = (_engine_pass(path, device) if kind == "engine" else
                  _api_pass(path, device, int(rest[0]), float(rest[1]), int(rest[2]) or None))
        print(json.dumps(result))
        return 0
    parser = argparse.ArgumentParser(prog="python3 -m headrace.bench.cases.pathlines", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--seeds", type=int, default=1_000_000)
    parser.add_argument("--step-size", type=float, default=0.05)
    parser.add_argument("--device", default="0")
    parser.add_argument("--cache", default="hot", help="hot, cold or hot,cold")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--disk-gbps", type=float, default=None)
    parser.add_argument("--budget-cache", type=int, default=None,
                        help="instead: the tracer at its default cache and at this many bytes (units in rounds), hot")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.budget_cache:
        rows = budget_rows(os.fspath(args.file), seeds=args.seeds, step_size=args.step_size, device=args.device,
                           cache_bytes=args.budget_cache, rounds=args.rounds)
        write_rows(os.fspath(out / "pathlines-budget.csv"), rows)
        for small in (r for r in rows if r["cache_bytes"] != "default"):
            whole = next(r for r in rows if r["round"] == small["round"] and r["cache_bytes"] == "default")
            print(f"round {small['round']}: {small['cache_bytes']:,} bytes of cache: {small['steps_per_s'] / whole['steps_per_s']:.2f} x "
                  f"the particle-steps per second with whole frames ({small['rounds']} rounds, {small['units_loaded']} units loaded)")
        return 0
    with tempfile.TemporaryDirectory(prefix="headrace-pathlines-", dir=out) as scratch:
        result = measure(os.fspath(args.file), seeds=args.seeds, step_size=args.step_size, device=args.device,
                         caches=args.cache.split(","), rounds=args.rounds, disk_gbps=args.disk_gbps, scratch=scratch)
    (out / "pathlines.json").write_text(json.dumps(result, indent=2))
    write_rows(os.fspath(out / "pathlines.csv"), result["rows"])
    for cache, medians in result["summary"].items():
        print(f"{cache}: trace {medians['trace_s']:.3f} s = {medians['trace_vs_yardstick']:.2f} x the yardstick "
              f"({medians['yardstick_s']:.3f} s; engine {medians['engine_gbps']:.1f} GB/s, stepping {medians['advance_s']:.3f} s, "
              f"{medians['particle_steps_per_s'] / 1e9:.2f} G particle-steps/s); the call with its setup "
              f"{medians['api_wall_vs_yardstick']:.2f} x; the command {medians['cli_wall_s']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
