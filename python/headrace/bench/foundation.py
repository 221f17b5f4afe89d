"""The foundation's measurement: every host backend reading a multi-GB container, cold and hot, as
ratios to the device ceiling that ``headrace probe`` measured in the same call.

    headrace probe DIR --json > probe.json
    python3 -m headrace.bench.foundation FILE.hrc --probe probe.json --out DIR

Targets: the best backend cold >= 0.95 x the probe ceiling; hot (page cache) with enough
threads >= 3 x the single-thread buffered read. Cold evicts the file's pages before each repeat;
``--cache drop-all`` drops the whole machine's page cache instead (root only). Writes reads.csv, summary.json and results.md (a
Markdown table for docs/results.md) under --out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path
from typing import Any

from headrace.bench.harness import CacheState, Measurement, write_csv
from headrace.reading import read_container

__all__ = ["COLD", "HOT", "main"]

MiB = 1 << 20
# (backend, knobs): the cold axis sweeps what a disk rewards (parallelism, queue depth, block size).
# Knobs by name, of their own types each (headrace.settings checks them).
COLD: list[tuple[str, dict[str, Any]]] = [
    ("posix", {"threads": 1}),
    ("posix", {"threads": 4}),
    ("posix", {"threads": 16}),
    ("posix", {"threads": 32}),
    ("direct", {"threads": 4}),
    ("direct", {"threads": 16}),
    ("direct", {"threads": 32}),
    ("direct", {"threads": 16, "task_size_bytes": 1 * MiB}),
    ("mmap", {"threads": 16}),
    ("mmap", {"threads": 16, "mmap_mode": "window"}),
    ("uring", {"queue_depth": 8}),
    ("uring", {"queue_depth": 16}),
    ("uring", {"queue_depth": 32}),
    ("uring", {"queue_depth": 64}),
    ("uring", {"queue_depth": 32, "task_size_bytes": 1 * MiB}),
    ("uring", {"queue_depth": 32, "uring_register_buffers": True}),
]
# The hot axis: threads against the page cache (memory bandwidth and copy cost).
HOT: list[tuple[str, dict[str, Any]]] = [
    ("posix", {"threads": 1}),
    ("posix", {"threads": 4}),
    ("posix", {"threads": 8}),
    ("posix", {"threads": 16}),
    ("posix", {"threads": 32}),
    ("mmap", {"threads": 16}),
    ("uring", {"queue_depth": 32, "uring_o_direct": False}),
    ("ram", {"threads": 16}),
]


def knobs_text(knobs: dict[str, object]) -> str:
    return " ".join(f"{k}={v}" for k, v in knobs.items())


def run(path: str, ceiling_gbps: float, repeats: int, cold: CacheState = "cold") -> tuple[list[Measurement], dict[str, object]]:
    """Every backend of the two axes; ``cold`` is how the cold axis empties the cache (cold or drop-all)."""
    results: list[Measurement] = []
    axes: list[tuple[CacheState, list[tuple[str, dict[str, Any]]]]] = [(cold, COLD), ("hot", HOT)]
    for cache, axis in axes:
        for backend, knobs in axis:
            measurement = read_container(path, backend, cache, repeats, **knobs)
            measurement.parameters["knobs"] = knobs_text(knobs)
            measurement.parameters["ratio_to_ceiling"] = round(measurement.best_gbps / ceiling_gbps, 4)
            results.append(measurement)
            print(f"{cache:4s} {backend:6s} {knobs_text(knobs):40s} {measurement.best_gbps:7.3f} GB/s "
                  f"({measurement.best_gbps / ceiling_gbps:.3f} x ceiling, spread {measurement.spread:.0%})", flush=True)
    best_cold = max((m for m in results if m.cache != "hot"), key=lambda m: m.best_gbps)
    single = next(m for m in results if m.cache == "hot" and m.parameters["backend"] == "posix"
                  and m.parameters["knobs"] == "threads=1")
    best_hot = max((m for m in results if m.cache == "hot" and m.parameters["backend"] != "ram"),
                   key=lambda m: m.best_gbps)
    summary = {
        "file": path,
        "bytes": best_cold.bytes,
        "ceiling_gbps": ceiling_gbps,
        "best_cold": {"backend": best_cold.parameters["backend"], "knobs": best_cold.parameters["knobs"],
                      "gbps": best_cold.best_gbps, "ratio_to_ceiling": best_cold.best_gbps / ceiling_gbps,
                      "cache_method": best_cold.cache_method},
        "hot_single_thread_gbps": single.best_gbps,
        "best_hot": {"backend": best_hot.parameters["backend"], "knobs": best_hot.parameters["knobs"],
                     "gbps": best_hot.best_gbps, "ratio_to_single_thread": best_hot.best_gbps / single.best_gbps},
        "targets": {"cold_ratio_ge_0.95": best_cold.best_gbps / ceiling_gbps >= 0.95,
                    "hot_ratio_ge_3": best_hot.best_gbps / single.best_gbps >= 3.0},
        "host": platform.node(),
        "cpus": os.cpu_count(),
    }
    return results, summary


def markdown(results: list[Measurement], summary: dict[str, object]) -> str:
    lines = ["| cache | backend | knobs | GB/s (best) | GB/s (median) | x ceiling | spread |",
             "|---|---|---|---:|---:|---:|---:|"]
    for m in results:
        lines.append(f"| {m.cache} ({m.cache_method}) | {m.parameters['backend']} | {m.parameters['knobs']} | "
                     f"{m.best_gbps:.3f} | {m.median_gbps:.3f} | {m.parameters['ratio_to_ceiling']:.3f} | "
                     f"{m.spread:.0%} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m headrace.bench.foundation", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", help="a multi-GB container on the device the probe measured")
    parser.add_argument("--probe", required=True, help="`headrace probe --json` output of the same call")
    parser.add_argument("--out", required=True, help="directory for reads.csv, summary.json, results.md")
    parser.add_argument("--repeats", type=int, default=2, help="timed repeats per backend (default 2)")
    parser.add_argument("--cache", choices=("cold", "drop-all"), default="cold",
                        help="the cold axis: this file's pages evicted (default), or the whole machine's page cache "
                             "dropped (root only)")
    args = parser.parse_args(argv)
    ceiling = json.loads(Path(args.probe).read_text())["ceiling"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results, summary = run(args.file, ceiling["gigabytes_per_second"], args.repeats, args.cache)
    summary["ceiling_point"] = ceiling
    write_csv(str(out / "reads.csv"), results)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    (out / "results.md").write_text(markdown(results, summary))
    print(json.dumps(summary, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
