"""Draws the results of ``headrace bench`` or the timeline of ``headrace play`` as a figure (PNG, SVG,
PDF: the ending of --out says which).

    headrace plot RESULTS.csv --out FIG.png
    headrace plot TIMELINE.json --out FIG.png

A results file draws one panel per study found in it. Particle studies (``headrace bench particles``):
wall-clock frame time per method against each factor that varies (particles per batch, batches in
flight, staging), the best over the other factors, and the waits for a free segment per frame against
the batches in flight. Streamline studies (``headrace bench streamlines``): scaling draws time against
threads per implementation (strong and weak side by side); io and concurrency draw time against the
Hilbert unit size per thread count (hilbert-mmap as a dashed line); banks against the bank count;
madvise against threads per interval.

A timeline record of ``headrace play`` (JSON, "format": "headrace-play-timeline/1") draws one panel per
run of stages, a lane per kind of work (file I/O, flatten, H2D copy, decompress, value ranges, structure
update, render), two consecutive frames from the middle of each run (--all-frames: every frame); the
table of fps, the ratio to the render-only fps and the mean milliseconds per frame of each kind is
printed in Markdown.

Where this comes from: the panels are drawn as the papers behind the studies draw theirs: Müller and
Ertl, "Quantifying Performance Gains of DirectStorage for the Visualisation of Time-Dependent Particle
Data Sets" (particles); Jiang et al., "Multi-Threaded Streamline Tracing for Data-Intensive
Architectures" (streamlines); the time-varying AMR study behind ``headrace play`` (docs/volume.md).
"""

from __future__ import annotations

import argparse
import csv
import os
from collections import defaultdict

from headrace import errors
from headrace._files import read_rows, replacing
from headrace.cli._output import console
from headrace.cli._shared import ImageFile, Path
from headrace.errors import BadDataError, UsageError
from headrace.timeline import draw_timeline, read_timeline, summary_table

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction, summary: str) -> None:
    parser = subparsers.add_parser("plot", help=summary,
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", metavar="RESULTS.csv|TIMELINE.json", type=Path(),
                        help="a results file of headrace bench (CSV) or a timeline record of headrace play (JSON)")
    parser.add_argument("--out", required=True, metavar="FIG.png", type=ImageFile(),
                        help="the figure to write, in the format its ending names")
    parser.add_argument("--all-frames", action="store_true",
                        help="for a timeline record: every frame of each run, not two from the middle")
    parser.set_defaults(func=run)


def _read_results(path: str) -> list[dict[str, str]]:
    """The rows of a results file; a one-line error for a file that is missing or not CSV text."""
    if not os.path.isfile(path):  # a bad argument: the file named is not there
        raise errors.UsageError(f"{path}: {'a folder' if os.path.isdir(path) else 'no such file'}; expected a results "
                                "file of headrace bench or a timeline record of headrace play")
    try:
        return read_rows(path)
    except (UnicodeDecodeError, csv.Error) as error:
        raise errors.BadDataError(f"{path}: expected a CSV text file of headrace bench, found {error}") from None


def _series(rows, x: str, label) -> dict[str, list[tuple[float, float]]]:
    lines: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for row in rows:
        lines[label(row)].append((float(row[x]), float(row["seconds_min"])))
    return {name: sorted(points) for name, points in sorted(lines.items())}


SECONDS = "time to completion (s)"


# The particle study's factors besides the method, as the panels name them.
PARTICLE_FACTORS = (("batch", "particles per batch"), ("segments", "batches in flight"), ("staging_bytes", "staging (bytes)"))


def _particle_panels(rows):
    """Frame time per method against each factor that varies, the best over the others, and the waits
    for a free segment per frame against the batches in flight when they vary (the DirectStorage
    particle-streaming paper's figures 5 and 9), from the rows that measured something."""
    measured = [r for r in rows if r.get("frame_seconds") not in (None, "")]
    if not measured:
        return
    varying = [f for f in PARTICLE_FACTORS if len({r[f[0]] for r in measured}) > 1] or list(PARTICLE_FACTORS[:1])
    # A sample's points are single draws at scattered levels: drawn as points, lines would suggest a trend.
    points_only = any(r.get("design", "grid") != "grid" for r in measured)
    for key, label in varying:
        best: dict[str, dict[float, float]] = defaultdict(dict)
        for r in measured:
            x = float(r[key])
            best[r["method"]][x] = min(best[r["method"]].get(x, float("inf")), float(r["frame_seconds"]))
        yield (f"frame time per method by {label} (best over the other factors)", label, "wall-clock frame time (s)",
               {m: sorted(points.items()) for m, points in sorted(best.items())}, True, True, points_only)
    key, label = next((f for f in varying if f[0] == "segments"), varying[0])
    waits: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in measured:
        waits[r["method"]][float(r[key])].append(float(r["segment_waits_per_frame"]))
    yield (f"waits for a free segment per frame, by {label}", label, "waits per frame (mean)",
           {m: sorted((x, sum(v) / len(v)) for x, v in points.items()) for m, points in sorted(waits.items())}, True, False,
           points_only)


def _panels(rows):
    """(title, x label, y label, series, log x, log y[, points only]) per panel, from the studies present."""
    yield from _particle_panels(rows)
    by_study: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        if row.get("study"):
            by_study[row["study"]].append(row)
    for study, group in by_study.items():
        if study == "scaling":
            for scaling in ("strong", "weak"):
                part = [r for r in group if r.get("scaling") == scaling]
                if part:
                    yield (f"{scaling} scaling", "threads", SECONDS,
                           _series(part, "threads", lambda r: r["implementation"]), True, True)
        elif study in ("io", "concurrency"):
            user = [r for r in group if r["implementation"] == "hilbert-user"]
            label = (lambda r: f"{'direct' if r['direct'] == 'True' else 'standard'} I/O, {r['threads']} threads") \
                if study == "io" else (lambda r: f"{r['threads']} threads")
            series = _series(user, "unit_pages", label)
            for r in (r for r in group if r["implementation"] == "hilbert-mmap"):
                xs = [p for line in series.values() for p, _ in line] or [1.0]
                series[f"hilbert-mmap, {r['threads']} threads"] = [(min(xs), float(r["seconds_min"])),
                                                                   (max(xs), float(r["seconds_min"]))]
            yield f"{study}: time against chunk size", "chunk size (pages)", SECONDS, series, True, True
        elif study == "banks":
            yield "banks", "banks", SECONDS, _series(group, "banks", lambda r: f"{r['unit_pages']} pages"), True, True
        elif study == "madvise":
            yield "madvise", "threads", SECONDS, _series(group, "threads",
                                                         lambda r: f"{r['implementation']}, every {r['madvise_interval_s']} s"), True, True


def _is_json(path: str) -> bool:
    """Whether the file starts like a JSON object, as a timeline record does and CSV never does."""
    try:
        with open(path, "rb") as file:
            return file.read(64).lstrip().startswith(b"{")
    except OSError:  # _read_results says what is wrong with it
        return False


def _draw_timeline(args: argparse.Namespace) -> int:
    record = read_timeline(args.results)
    draw_timeline(record, args.out, all_frames=args.all_frames)
    console.print(summary_table(record), markup=False, soft_wrap=True, end="")  # Markdown: never wrapped
    console.print(f"{args.out}: {len(record['runs'])} panels, one per run")
    return 0


def run(args: argparse.Namespace) -> int:
    if _is_json(args.results):
        return _draw_timeline(args)
    import matplotlib  # heavy: loaded only to draw the figure

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if args.all_frames:
        raise UsageError("--all-frames: only for a timeline record of headrace play, not a results file of headrace bench")
    rows = _read_results(args.results)
    try:
        panels = list(_panels(rows))
    except KeyError as error:
        raise BadDataError(f"{args.results}: expected the columns of a headrace bench study, found a row without "
                           f"{error}") from None
    except ValueError as error:
        raise BadDataError(f"{args.results}: expected the numbers of a headrace bench study, found {error}") from None
    if not panels:
        raise UsageError(f"{args.results}: no rows of a study this command draws")
    figure, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    names = dict.fromkeys(name for panel in panels for name in panel[3])
    colors = {name: f"C{n % 10}" for n, name in enumerate(names)}  # one colour per series in every panel
    for axis, (title, xlabel, ylabel, series, log_x, log_y, *points_only) in zip(axes[0], panels):
        for name, points in series.items():
            style = "--" if name.startswith("hilbert-mmap,") else "o" if any(points_only) else "-o"
            axis.plot([p for p, _ in points], [t for _, t in points], style, label=name, markersize=4, color=colors[name])
        axis.set(title=title, xlabel=xlabel, ylabel=ylabel)
        if log_x:
            axis.set_xscale("log", base=2)
        if log_y:
            axis.set_yscale("log")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=7)
    figure.tight_layout()
    with replacing(args.out) as partial:
        figure.savefig(partial, format=os.path.splitext(args.out)[1][1:].lower(), dpi=120)
    console.print(f"{args.out}: {len(panels)} panels from {len(rows)} rows")
    return 0
