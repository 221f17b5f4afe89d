"""The before/after table of bench/house_on_device.sh's compare phase: the user benchmark's medians of
each version and round, and the after/before ratio of the versions' medians over the rounds.

    python3 bench/house_compare.py OUT_DIR
"""

from __future__ import annotations

import csv
import json
import statistics
import sys
from pathlib import Path


def metrics(run: Path) -> dict[str, float]:
    """One version's run folder: stream GB/s hot and cold, its ratio to KvikIO, the render's frame time."""
    summary = json.loads((run / "user_stream.json").read_text())
    values: dict[str, float] = {}
    for state in ("hot", "cold"):
        if state in summary:
            values[f"ds.stream(device=0) {state}, GB/s"] = summary[state]["headrace_median_gbps"]
            values[f"{state}: x KvikIO (paired median)"] = summary[state]["x_kvikio_paired_median"]
    with open(run / "render-100m.csv") as rows:
        values["100 M-particle frame, auto, ms"] = 1e3 * float(next(csv.DictReader(rows))["frame_seconds"])
    values["headrace render, fresh process, s"] = float((run / "render-cli-seconds.txt").read_text().split()[-1])
    return values


def main(out: Path) -> None:
    runs = sorted((p for p in out.iterdir() if p.is_dir() and p.name.split("-")[0] in ("before", "after")),
                  key=lambda p: (p.name.split("-")[1], p.name.startswith("after")))  # round by round, before first
    table = {run.name: metrics(run) for run in runs}
    names = list(next(iter(table.values())))
    print("| measure | " + " | ".join(table) + " | after / before (medians) |")
    print("|---" * (len(table) + 2) + "|")
    for name in names:
        of = {version: statistics.median(v[name] for run, v in table.items() if run.startswith(version))
              for version in ("before", "after")}
        cells = " | ".join(f"{v[name]:.3g}" for v in table.values())
        print(f"| {name} | {cells} | {of['after'] / of['before']:.3f} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
