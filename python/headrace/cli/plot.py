"""``headrace plot RESULTS.csv --out FIG.png``: the figures of a ``headrace bench`` results file.

Streamline studies (seed 002): scaling draws time against threads per implementation (strong and weak
side by side, like the paper's figure 8); io and concurrency draw time against the Hilbert unit size per
thread count (figures 4 and 7; hilbert-mmap as a dashed line); banks against the bank count (figure 5);
madvise against threads per interval (figure 6). One panel per study found in the file.
"""

from __future__ import annotations

import argparse
import os
from collections import defaultdict

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("plot", help="draw the figures of a headrace bench results file",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", metavar="RESULTS.csv")
    parser.add_argument("--out", required=True, metavar="FIG.png")
    parser.set_defaults(func=run)


def _series(rows, x: str, label) -> dict[str, list[tuple[float, float]]]:
    lines: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for row in rows:
        lines[label(row)].append((float(row[x]), float(row["seconds_min"])))
    return {name: sorted(points) for name, points in sorted(lines.items())}


def _panels(rows):
    """(title, x label, series, log x) per panel, from the studies present."""
    by_study: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_study[row.get("study", "")].append(row)
    for study, group in by_study.items():
        if study == "scaling":
            for scaling in ("strong", "weak"):
                part = [r for r in group if r.get("scaling") == scaling]
                if part:
                    yield f"{scaling} scaling", "threads", _series(part, "threads", lambda r: r["implementation"]), True
        elif study in ("io", "concurrency"):
            user = [r for r in group if r["implementation"] == "hilbert-user"]
            label = (lambda r: f"{'direct' if r['direct'] == 'True' else 'standard'} I/O, {r['threads']} threads") \
                if study == "io" else (lambda r: f"{r['threads']} threads")
            series = _series(user, "unit_pages", label)
            for r in (r for r in group if r["implementation"] == "hilbert-mmap"):
                xs = [p for line in series.values() for p, _ in line] or [1.0]
                series[f"hilbert-mmap, {r['threads']} threads"] = [(min(xs), float(r["seconds_min"])),
                                                                   (max(xs), float(r["seconds_min"]))]
            yield f"{study}: time against chunk size", "chunk size (pages)", series, True
        elif study == "banks":
            yield "banks", "banks", _series(group, "banks", lambda r: f"{r['unit_pages']} pages"), True
        elif study == "madvise":
            yield "madvise", "threads", _series(group, "threads",
                                                lambda r: f"{r['implementation']}, every {r['madvise_interval_s']} s"), True


def run(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from headrace.bench.harness import read_rows
    from headrace.cli._output import console
    from headrace.errors import UsageError

    rows = read_rows(args.results)
    panels = list(_panels(rows))
    if not panels:
        raise UsageError(f"{args.results}: no rows of a study this command draws")
    figure, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    names = dict.fromkeys(name for _, _, series, _ in panels for name in series)
    colors = {name: f"C{n % 10}" for n, name in enumerate(names)}  # one colour per series in every panel
    for axis, (title, xlabel, series, log_x) in zip(axes[0], panels):
        for name, points in series.items():
            style = "--" if name.startswith("hilbert-mmap,") else "-o"
            axis.plot([p for p, _ in points], [t for _, t in points], style, label=name, markersize=4, color=colors[name])
        axis.set(title=title, xlabel=xlabel, ylabel="time to completion (s)")
        if log_x:
            axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=7)
    figure.tight_layout()
    partial = f"{args.out}.partial"
    figure.savefig(partial, format=os.path.splitext(args.out)[1][1:] or "png", dpi=120)
    os.replace(partial, args.out)
    console.print(f"{args.out}: {len(panels)} panels from {len(rows)} rows")
    return 0
