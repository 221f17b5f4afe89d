"""The timeline figure of ``headrace play`` (seed ``003_…``, section 5, figure 3).

    record = headrace.timeline.read_timeline("timeline.json")
    headrace.timeline.draw_timeline(record, "timeline.png")
    print(headrace.timeline.summary_table(record))

``headrace play`` runs its animation loop once per set of cumulative stages (baseline, double, pinned,
...) and records, per frame, when each kind of work ran (:data:`SPAN_KINDS`). The figure has one panel
per run, like figure 3 has one per step of the paper's pipeline: a lane per kind of work with a bar per
span, thin lines where one frame's image ends and the next begins. Each panel has its own time axis,
since a baseline's frame can take forty times an optimised one's. By default a panel shows two
consecutive frames from the middle of the run, as the paper does: past the first frame, which fills the
pipeline, and before the last, which has no next frame to load ahead.

The record (a dict, saved as JSON)::

    {"format": "headrace-play-timeline/1", "file": ..., "field": ..., "device": ..., "width": ...,
     "height": ..., "frame_bytes": ...,
     "runs": [{"stages": ..., "enabled": [...], "seconds": ..., "frames_shown": ..., "fps": ...,
               "render_only_fps": ...,
               "frames": [{"frame": 3, "start": 0.0, "end": 2.01, "spans": {"io": [[t0, t1], ...], ...}}]}]}

Times are seconds since the run started; a frame's ``start``/``end`` is its interval (from the previous
image to its own); its spans are the work done for it, which may lie before that interval (loaded
ahead). ``render_only_fps`` is the same renderer's rate with the frame resident, the ceiling of ``fps``.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

from headrace._files import replacing
from headrace.errors import BadDataError

__all__ = ["FORMAT", "SPAN_KINDS", "COLOURS", "read_timeline", "check_timeline", "summarise", "summary_table",
           "shown_frames", "timeline_figure", "draw_timeline"]

FORMAT = "headrace-play-timeline/1"

# The kinds of work in the order data flows through them (so the lanes read top to bottom like the
# pipeline: a compressed frame is copied before it is decompressed), with their legend labels.
SPAN_KINDS = {
    "io": "file I/O",
    "flatten": "flatten (CPU)",
    "h2d": "H2D copy",
    "decode": "decompress (GPU)",
    "ranges": "value ranges",
    "structure": "structure update",
    "render": "render",
}

# Okabe and Ito's colour-blind-safe palette, one colour per kind in every panel.
COLOURS = {
    "io": "#0072B2",  # blue
    "flatten": "#E69F00",  # orange
    "h2d": "#56B4E9",  # sky blue
    "decode": "#CC79A7",  # reddish purple
    "ranges": "#F0E442",  # yellow
    "structure": "#D55E00",  # vermilion
    "render": "#009E73",  # bluish green
}

RECORD_KEYS = ("format", "file", "field", "device", "width", "height", "frame_bytes", "runs")
RUN_KEYS = ("stages", "enabled", "seconds", "frames_shown", "fps", "render_only_fps", "frames")
FRAME_KEYS = ("frame", "start", "end", "spans")


def read_timeline(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The timeline record in a JSON file, checked by :func:`check_timeline`; a :class:`BadDataError`
    naming the file for one that is not such a record."""
    name = os.fspath(path)
    with open(name, "rb") as file:
        text = file.read()
    try:
        record = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadDataError(f"{name}: expected a timeline record of headrace play (JSON), found {error}") from None
    check_timeline(record, name)
    return record


def _fail(where: str, expected: str, found: Any) -> BadDataError:
    return BadDataError(f"{where}: expected {expected}, found {json.dumps(found)[:80]}")


def _keys(value: Any, keys: tuple[str, ...], where: str, what: str) -> None:
    if not isinstance(value, dict):
        raise _fail(where, what, value)
    missing = [key for key in keys if key not in value]
    if missing:
        raise BadDataError(f"{where}: {what} without the key {missing[0]!r}")


def _is_seconds(value: Any) -> bool:
    """A time or a rate: a finite number, not negative."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value >= 0


def _seconds(value: Any, where: str) -> float:
    if not _is_seconds(value):
        raise _fail(where, "a number >= 0", value)
    return float(value)


def check_timeline(record: Any, where: str = "timeline") -> None:
    """Raises :class:`BadDataError` (one line starting with ``where``, then the place in the record) unless
    ``record`` is a timeline record: every key of the format, at least one run of at least one frame,
    times and rates >= 0, each frame's and each span's start no later than its end, span kinds of
    :data:`SPAN_KINDS`. ``render_only_fps`` may be null or 0 where it was not measured."""
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        found = record.get("format") if isinstance(record, dict) else type(record).__name__
        raise BadDataError(f"{where}: expected a timeline record of headrace play (\"format\": \"{FORMAT}\"), "
                           f"found {json.dumps(found)[:80]}")
    _keys(record, RECORD_KEYS, where, "a timeline record")
    if not isinstance(record["runs"], list) or not record["runs"]:
        raise _fail(f"{where}: runs", "a list of at least one run", record["runs"])
    for r, run in enumerate(record["runs"]):
        at = f"{where}: runs[{r}]"
        _keys(run, RUN_KEYS, at, "a run")
        for key in ("seconds", "fps"):
            _seconds(run[key], f"{at}.{key}")
        if run["render_only_fps"] is not None:
            _seconds(run["render_only_fps"], f"{at}.render_only_fps")
        if not isinstance(run["frames"], list) or not run["frames"]:
            raise _fail(f"{at}.frames", "a list of at least one frame", run["frames"])
        for f, frame in enumerate(run["frames"]):
            _check_frame(frame, f"{at}.frames[{f}]")


def _check_frame(frame: Any, at: str) -> None:
    _keys(frame, FRAME_KEYS, at, "a frame")
    if isinstance(frame["frame"], bool) or not isinstance(frame["frame"], int) or frame["frame"] < 0:
        raise _fail(f"{at}.frame", "a frame number >= 0", frame["frame"])
    if _seconds(frame["start"], f"{at}.start") > _seconds(frame["end"], f"{at}.end"):
        raise _fail(at, "start <= end", [frame["start"], frame["end"]])
    if not isinstance(frame["spans"], dict):
        raise _fail(f"{at}.spans", "an object of span lists by kind", frame["spans"])
    for kind, spans in frame["spans"].items():
        if kind not in SPAN_KINDS:
            raise _fail(f"{at}.spans", f"span kinds among {', '.join(SPAN_KINDS)}", kind)
        if not isinstance(spans, list):
            raise _fail(f"{at}.spans.{kind}", "a list of [start, end] pairs", spans)
        for s, span in enumerate(spans):
            place = f"{at}.spans.{kind}[{s}]"
            if not isinstance(span, list) or len(span) != 2 or not all(map(_is_seconds, span)):
                raise _fail(place, "a [start, end] pair of numbers >= 0", span)
            if span[0] > span[1]:
                raise _fail(place, "start <= end", span)


def _kinds_present(record: dict[str, Any]) -> list[str]:
    """The kinds with at least one span anywhere in the record, in :data:`SPAN_KINDS` order: the lanes
    of every panel and the columns of the table (a kind no run does would only take room)."""
    present = {kind for run in record["runs"] for frame in run["frames"] for kind, spans in frame["spans"].items()
               if spans}
    return [kind for kind in SPAN_KINDS if kind in present]


def _ratio(run: dict[str, Any]) -> float | None:
    return run["fps"] / run["render_only_fps"] if run["render_only_fps"] else None


def summarise(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Per run, in the order run: ``stages``, ``fps``, ``render_only_ratio`` (fps / render-only fps; None
    where that was not measured) and ``mean_seconds``, by kind of :data:`SPAN_KINDS`: the sum of a
    frame's spans of that kind averaged over the run's frames (work time, not wall time: two reads at
    once count twice; 0 for a kind the run does not do)."""
    summary = []
    for run in record["runs"]:
        totals = dict.fromkeys(SPAN_KINDS, 0.0)
        for frame in run["frames"]:
            for kind, spans in frame["spans"].items():
                totals[kind] += sum(end - start for start, end in spans)
        summary.append({"stages": run["stages"], "fps": run["fps"], "render_only_ratio": _ratio(run),
                        "mean_seconds": {kind: total / len(run["frames"]) for kind, total in totals.items()}})
    return summary


def summary_table(record: dict[str, Any]) -> str:
    """:func:`summarise` as a Markdown table for docs/results.md: one row per run; fps, the ratio to the
    render-only fps, and the mean milliseconds per frame of each kind of work the record holds."""
    kinds = _kinds_present(record)
    lines = ["| " + " | ".join(["stages", "fps", "fps / render-only"] + [f"{SPAN_KINDS[k]} (ms)" for k in kinds]) + " |",
             "|---|" + "---:|" * (2 + len(kinds))]
    for row in summarise(record):
        ratio = "–" if row["render_only_ratio"] is None else f"{row['render_only_ratio']:.3f}"
        cells = [row["stages"], f"{row['fps']:.2f}", ratio] + [f"{row['mean_seconds'][k] * 1e3:.1f}" for k in kinds]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def shown_frames(run: dict[str, Any], all_frames: bool = False) -> list[dict[str, Any]]:
    """The frames a run's panel shows: all of them, or two consecutive ones from the middle of the run
    (past the first, which fills the pipeline; the only ones of a run of one or two frames)."""
    frames = run["frames"]
    if all_frames or len(frames) <= 2:
        return frames
    first = (len(frames) - 1) // 2
    return frames[first:first + 2]


def _window(frames: list[dict[str, Any]], all_frames: bool) -> tuple[float, float]:
    """The time a panel shows: the frames' intervals; for all frames, any work outside them as well."""
    low, high = frames[0]["start"], frames[-1]["end"]
    if all_frames:
        times = [t for frame in frames for spans in frame["spans"].values() for span in spans for t in span]
        low, high = min([low, *times]), max([high, *times])
    return low, high


def timeline_figure(record: dict[str, Any], all_frames: bool = False):
    """The figure (a matplotlib ``Figure`` on the Agg canvas, outside pyplot) of a checked record: one
    panel per run, stacked; in each a lane per kind of work (the kinds the record holds), a
    ``broken_barh`` collection per kind whose ``gid`` is the kind, a bar for each span that overlaps
    the panel's time (not just touches it); a thin line at each frame boundary, each frame's number
    above its interval."""
    # Deferred: matplotlib is optional and slow to import; only a figure needs it.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch
    from matplotlib.transforms import blended_transform_factory

    kinds = _kinds_present(record) or list(SPAN_KINDS)  # a record without spans still gets its lanes
    runs = record["runs"]
    figure = Figure(figsize=(10, len(runs) * (0.3 * len(kinds) + 1.1) + 0.9), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(len(runs), 1, squeeze=False)[:, 0]
    lanes = {kind: len(kinds) - 1 - n for n, kind in enumerate(kinds)}  # the first kind on top
    for axis, run, summary in zip(axes, runs, summarise(record)):
        frames = shown_frames(run, all_frames)
        low, high = _window(frames, all_frames)
        for kind in kinds:
            bars = [(start, end - start) for frame in run["frames"] for start, end in frame["spans"].get(kind, [])
                    if end > low and start < high]
            axis.broken_barh(bars, (lanes[kind] - 0.375, 0.75), facecolors=COLOURS[kind], gid=kind)
        _mark_frames(axis, frames, blended_transform_factory(axis.transData, axis.transAxes))
        margin = (high - low) * 0.01 or 1e-3
        axis.set_xlim(low - margin, high + margin)
        axis.set_ylim(-0.6, len(kinds) - 0.4)
        axis.set_yticks(list(lanes.values()), [SPAN_KINDS[kind] for kind in kinds], fontsize=8)
        axis.set_xlabel("seconds since the run started", fontsize=8)
        axis.tick_params(axis="x", labelsize=8)
        ratio = "render-only fps not measured" if summary["render_only_ratio"] is None else (
            f"{summary['render_only_ratio']:.3f} × render-only ({run['render_only_fps']:.3g} fps)")
        axis.set_title(f"{run['stages']}: {run['fps']:.3g} fps, {ratio}", fontsize=10, loc="left", pad=14)
    figure.suptitle(f"{record['file']} ({record['field']}), {record['width']}×{record['height']} on {record['device']}, "
                    f"{record['frame_bytes']:,} bytes per frame", fontsize=11)
    figure.legend(handles=[Patch(facecolor=COLOURS[kind], label=SPAN_KINDS[kind]) for kind in kinds],
                  loc="outside lower center", ncols=len(kinds), fontsize=8, frameon=False)
    return figure


def _mark_frames(axis, frames: list[dict[str, Any]], x_data_y_axes) -> None:
    """Lines at the frames' boundaries; each frame's number above its interval (every few for many)."""
    boundaries = sorted({frame["start"] for frame in frames} | {frames[-1]["end"]})
    for x in boundaries:
        axis.axvline(x, color="0.35", linewidth=0.6, zorder=0)
    every = math.ceil(len(frames) / 20)
    word = "frame " if len(frames) <= 8 else ""  # for many frames the bare number is what fits
    for frame in frames[::every]:
        axis.text((frame["start"] + frame["end"]) / 2, 1.0, f"{word}{frame['frame']}", transform=x_data_y_axes,
                  ha="center", va="bottom", fontsize=7)


def draw_timeline(record: dict[str, Any], out_path: str | os.PathLike[str], all_frames: bool = False) -> None:
    """Writes :func:`timeline_figure` to ``out_path`` in the format its ending names (png, svg, pdf, ...),
    whole or not at all."""
    figure = timeline_figure(record, all_frames)
    with replacing(out_path) as partial:
        figure.savefig(partial, format=os.path.splitext(os.fspath(out_path))[1][1:].lower(), dpi=120)
