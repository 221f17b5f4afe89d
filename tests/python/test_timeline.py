"""The timeline of ``headrace play`` (issue 18, item 6; seed 003's figure 3): the record's checks, the
summary numbers and table, the figure's bars where the spans say, and ``headrace plot TIMELINE.json``.

The made-up record has two runs of different speeds (2 s and 0.5 s per frame), two reads at once in
one frame, work done ahead of a frame's interval and kinds missing from some frames and runs. Its times
are sums of powers of two, so the means compare exactly.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from headrace import timeline
from headrace.cli.main import main
from headrace.errors import BadDataError

BASELINE_FRAMES = [
    {"frame": 0, "start": 0.0, "end": 2.0,
     "spans": {"io": [[0.0, 0.75]], "flatten": [[0.75, 1.0]], "h2d": [[1.0, 1.25]], "render": [[1.5, 2.0]]}},
    {"frame": 1, "start": 2.0, "end": 4.0,  # two reads at once: 1.0 s of reading in 0.75 s
     "spans": {"io": [[2.0, 2.5], [2.25, 2.75]], "flatten": [[2.75, 3.0]], "h2d": [[3.0, 3.25]], "render": [[3.5, 4.0]]}},
    {"frame": 2, "start": 4.0, "end": 6.0,
     "spans": {"io": [[4.0, 4.75]], "flatten": [[4.75, 5.0]], "h2d": [[5.0, 5.25]], "render": [[5.5, 6.0]]}},
]
# Frames 1-3 are read during the frame before (work done ahead); frame 0 has no structure update,
# frame 2 an empty flatten list.
ALL_FRAMES = [
    {"frame": 10, "start": 0.0, "end": 0.5, "spans": {"io": [[0.0, 0.125]], "decode": [[0.125, 0.25]], "render": [[0.25, 0.5]]}},
    {"frame": 11, "start": 0.5, "end": 1.0,
     "spans": {"io": [[0.25, 0.5]], "decode": [[0.5, 0.625]], "structure": [[0.625, 0.75]], "render": [[0.75, 1.0]]}},
    {"frame": 12, "start": 1.0, "end": 1.5,
     "spans": {"io": [[0.75, 1.0]], "decode": [[1.0, 1.125]], "structure": [[1.125, 1.25]], "render": [[1.25, 1.5]],
               "flatten": []}},
    {"frame": 13, "start": 1.5, "end": 2.0,
     "spans": {"io": [[1.25, 1.5]], "decode": [[1.5, 1.625]], "structure": [[1.625, 1.75]], "render": [[1.75, 2.0]]}},
]
RECORD = {
    "format": "headrace-play-timeline/1", "file": "data.hrc", "field": "density", "device": "cpu",
    "width": 64, "height": 48, "frame_bytes": 4096,
    "runs": [
        {"stages": "baseline", "enabled": ["baseline"], "seconds": 6.0, "frames_shown": 3, "fps": 0.5,
         "render_only_fps": 4.0, "frames": BASELINE_FRAMES},
        {"stages": "all", "enabled": ["double", "pinned", "direct", "flat", "refit", "overlap"], "seconds": 2.0,
         "frames_shown": 4, "fps": 2.0, "render_only_fps": 8.0, "frames": ALL_FRAMES},
    ],
}


def write(path: Path, record) -> Path:
    path.write_text(json.dumps(record))
    return path


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("headrace plot: ") and "Traceback" not in err, err
    return err


# --- the loader ---------------------------------------------------------------------------------------


def test_a_record_reads_back_as_written(tmp_path):
    assert timeline.read_timeline(write(tmp_path / "t.json", RECORD)) == RECORD


def _without(key):
    def change(record):
        del record["runs"][1][key]
    return change


def _set(value, *place):
    def change(record):
        target = record
        for step in place[:-1]:
            target = target[step]
        target[place[-1]] = value
    return change


BAD_RECORDS = {
    "format": (_set("headrace-play-timeline/2", "format"), ': expected a timeline record of headrace play ("format": '
               '"headrace-play-timeline/1"), found "headrace-play-timeline/2"'),
    "record key": (lambda r: r.pop("device"), ": a timeline record without the key 'device'"),
    "run key": (_without("fps"), ": runs[1]: a run without the key 'fps'"),
    "frame key": (lambda r: r["runs"][0]["frames"][2].pop("spans"), ": runs[0].frames[2]: a frame without the key 'spans'"),
    "no runs": (_set([], "runs"), ": runs: expected a list of at least one run, found []"),
    "no frames": (_set([], "runs", 1, "frames"), ": runs[1].frames: expected a list of at least one frame, found []"),
    "negative rate": (_set(-0.5, "runs", 0, "fps"), ": runs[0].fps: expected a number >= 0, found -0.5"),
    "text rate": (_set("fast", "runs", 0, "render_only_fps"), ': runs[0].render_only_fps: expected a number >= 0, found "fast"'),
    "frame number": (_set(2.5, "runs", 1, "frames", 0, "frame"),
                     ": runs[1].frames[0].frame: expected a frame number >= 0, found 2.5"),
    "reversed frame": (_set(1.0, "runs", 1, "frames", 3, "end"),
                       ": runs[1].frames[3]: expected start <= end, found [1.5, 1.0]"),
    "negative span": (_set([[-0.25, 0.5]], "runs", 0, "frames", 1, "spans", "io"),
                      ": runs[0].frames[1].spans.io[0]: expected a [start, end] pair of numbers >= 0, found [-0.25, 0.5]"),
    "reversed span": (_set([[0.0, 0.5], [2.75, 2.5]], "runs", 0, "frames", 1, "spans", "h2d"),
                      ": runs[0].frames[1].spans.h2d[1]: expected start <= end, found [2.75, 2.5]"),
    "not a pair": (_set([[0.0, 0.5, 1.0]], "runs", 0, "frames", 0, "spans", "render"),
                   ": runs[0].frames[0].spans.render[0]: expected a [start, end] pair of numbers >= 0, found [0.0, 0.5, 1.0]"),
    "unknown kind": (_set([[0.0, 0.5]], "runs", 0, "frames", 0, "spans", "bvh"),
                     ": runs[0].frames[0].spans: expected span kinds among io, flatten, h2d, decode, ranges, structure, "
                     'render, found "bvh"'),
}


@pytest.mark.parametrize("change,says", BAD_RECORDS.values(), ids=BAD_RECORDS.keys())
def test_a_bad_record_is_a_one_line_error_naming_the_file_and_the_place(tmp_path, change, says):
    record = copy.deepcopy(RECORD)
    change(record)
    path = write(tmp_path / "t.json", record)
    with pytest.raises(BadDataError) as raised:
        timeline.read_timeline(path)
    assert str(raised.value) == f"{path}{says}"


@pytest.mark.parametrize("text,says", [
    ("frame,seconds\n1,2\n", "expected a timeline record of headrace play (JSON), found Expecting value: line 1 column 1"),
    ('{"format": "headrace-play-timeline/1", ', "expected a timeline record of headrace play (JSON), found Expecting"),
    ("[1, 2]", 'expected a timeline record of headrace play ("format": "headrace-play-timeline/1"), found "list"'),
    ('{"format": "headrace-play-timeline/1", "runs": []}', "a timeline record without the key 'file'"),
])
def test_a_file_that_is_not_a_record_is_named(tmp_path, text, says):
    path = tmp_path / "t.json"
    path.write_text(text)
    with pytest.raises(BadDataError) as raised:
        timeline.read_timeline(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: {says}") and "\n" not in message


def test_a_number_that_is_not_finite_is_refused(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(RECORD).replace('"seconds": 6.0', '"seconds": Infinity'))
    with pytest.raises(BadDataError, match=r": runs\[0\]\.seconds: expected a number >= 0, found Infinity$"):
        timeline.read_timeline(path)


# --- the summary --------------------------------------------------------------------------------------


def test_the_summary_averages_each_kind_of_work_per_frame():
    baseline, fast = timeline.summarise(RECORD)
    assert baseline == {"stages": "baseline", "fps": 0.5, "render_only_ratio": 0.125, "mean_seconds": {
        "io": (0.75 + (0.5 + 0.5) + 0.75) / 3, "flatten": 0.25, "h2d": 0.25, "decode": 0.0, "ranges": 0.0,
        "structure": 0.0, "render": 0.5}}
    assert fast == {"stages": "all", "fps": 2.0, "render_only_ratio": 0.25, "mean_seconds": {
        "io": (0.125 + 0.25 * 3) / 4, "flatten": 0.0, "h2d": 0.0, "decode": 0.125, "ranges": 0.0,
        "structure": 0.125 * 3 / 4, "render": 0.25}}


def test_the_table_has_a_row_per_run_and_a_column_per_kind_of_work_done():
    assert timeline.summary_table(RECORD) == (
        "| stages | fps | fps / render-only | file I/O (ms) | flatten (CPU) (ms) | H2D copy (ms) | decompress (GPU) (ms) "
        "| structure update (ms) | render (ms) |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        "| baseline | 0.50 | 0.125 | 833.3 | 250.0 | 250.0 | 0.0 | 0.0 | 500.0 |\n"
        "| all | 2.00 | 0.250 | 218.8 | 0.0 | 0.0 | 125.0 | 93.8 | 250.0 |\n")


def test_a_run_without_a_render_only_rate_has_no_ratio():
    record = copy.deepcopy(RECORD)
    record["runs"][0]["render_only_fps"] = None
    assert timeline.summarise(record)[0]["render_only_ratio"] is None
    assert "\n| baseline | 0.50 | – | 833.3 |" in timeline.summary_table(record)
    title = timeline.timeline_figure(record).axes[0].get_title(loc="left")
    assert title == "baseline: 0.5 fps, render-only fps not measured"


# --- the figure ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("count,shown", [(1, [0]), (2, [0, 1]), (3, [1, 2]), (4, [1, 2]), (6, [2, 3]), (7, [3, 4])])
def test_a_panel_shows_two_consecutive_frames_from_the_middle(count, shown):
    run = {"frames": [{"frame": n} for n in range(count)]}
    assert [f["frame"] for f in timeline.shown_frames(run)] == shown
    assert [f["frame"] for f in timeline.shown_frames(run, all_frames=True)] == list(range(count))


def bars(axis) -> dict[str, list[tuple[float, float, float, float]]]:
    """(x start, x end, y bottom, y top) of each bar in a panel, by kind (the collection's gid)."""
    found = {}
    for collection in axis.collections:
        found[collection.get_gid()] = sorted(
            (float(v[:, 0].min()), float(v[:, 0].max()), float(v[:, 1].min()), float(v[:, 1].max()))
            for v in (path.vertices for path in collection.get_paths()))
    return found


LANES = ["io", "flatten", "h2d", "decode", "structure", "render"]  # those the record holds, top to bottom


def lane(kind: str) -> tuple[float, float]:
    y = len(LANES) - 1 - LANES.index(kind)
    return y - 0.375, y + 0.375


def test_the_bars_are_the_spans_of_the_two_frames_shown_in_their_lanes():
    figure = timeline.timeline_figure(RECORD)
    baseline, fast = figure.axes
    # Baseline: frames 1 and 2 (2 s to 6 s); frame 0's bars end at 2.0, touching, and are left out.
    assert bars(baseline) == {
        "io": [(2.0, 2.5, *lane("io")), (2.25, 2.75, *lane("io")), (4.0, 4.75, *lane("io"))],
        "flatten": [(2.75, 3.0, *lane("flatten")), (4.75, 5.0, *lane("flatten"))],
        "h2d": [(3.0, 3.25, *lane("h2d")), (5.0, 5.25, *lane("h2d"))],
        "decode": [], "structure": [],
        "render": [(3.5, 4.0, *lane("render")), (5.5, 6.0, *lane("render"))]}
    # All: frames 11 and 12 (0.5 s to 1.5 s); frame 13 was read ahead, during frame 12.
    assert bars(fast) == {
        "io": [(0.75, 1.0, *lane("io")), (1.25, 1.5, *lane("io"))], "flatten": [], "h2d": [],
        "decode": [(0.5, 0.625, *lane("decode")), (1.0, 1.125, *lane("decode"))],
        "structure": [(0.625, 0.75, *lane("structure")), (1.125, 1.25, *lane("structure"))],
        "render": [(0.75, 1.0, *lane("render")), (1.25, 1.5, *lane("render"))]}
    for axis, (low, high) in zip(figure.axes, [(2.0, 6.0), (0.5, 1.5)]):  # each panel its own time axis
        assert axis.get_xlim() == pytest.approx((low - 0.01 * (high - low), high + 0.01 * (high - low)))
        assert [t.get_text() for t in axis.get_yticklabels()] == [timeline.SPAN_KINDS[k] for k in LANES]
        assert [(y - 0.375, y + 0.375) for y in axis.get_yticks()] == [lane(k) for k in LANES]
        assert sorted(line.get_xdata()[0] for line in axis.lines) == [low, (low + high) / 2, high]
    assert [t.get_text() for t in baseline.texts] == ["frame 1", "frame 2"]
    assert [t.get_text() for t in fast.texts] == ["frame 11", "frame 12"]
    assert baseline.get_title(loc="left") == "baseline: 0.5 fps, 0.125 × render-only (4 fps)"
    assert fast.get_title(loc="left") == "all: 2 fps, 0.250 × render-only (8 fps)"
    (legend,) = figure.legends  # once for all panels
    assert [t.get_text() for t in legend.get_texts()] == [timeline.SPAN_KINDS[k] for k in LANES]
    colours = {c.get_gid(): c.get_facecolor() for axis in figure.axes for c in axis.collections if len(c.get_paths())}
    assert {kind: "#%02X%02X%02X" % tuple(round(255 * v) for v in rgba[0][:3]) for kind, rgba in colours.items()} == {
        kind: timeline.COLOURS[kind] for kind in LANES}


def test_all_frames_shows_every_frame_and_the_work_outside_them():
    fast = timeline.timeline_figure(RECORD, all_frames=True).axes[1]
    assert [t.get_text() for t in fast.texts] == ["frame 10", "frame 11", "frame 12", "frame 13"]
    assert bars(fast)["io"] == [(0.0, 0.125, *lane("io")), (0.25, 0.5, *lane("io")), (0.75, 1.0, *lane("io")),
                                (1.25, 1.5, *lane("io"))]
    assert len(bars(fast)["render"]) == 4


def test_the_png_has_each_kinds_colour_where_its_spans_are(tmp_path):
    from matplotlib.image import imread

    out = tmp_path / "t.png"
    timeline.draw_timeline(RECORD, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and [p.name for p in tmp_path.iterdir()] == ["t.png"]
    pixels = (imread(out)[:, :, :3] * 255).round().astype(int)
    figure = timeline.timeline_figure(RECORD)  # laid out at the written resolution: where each point lands
    figure.set_dpi(120)
    figure.canvas.draw()
    fast = figure.axes[1]
    height = pixels.shape[0]
    assert pixels.shape[:2] == (round(figure.get_figheight() * 120), round(figure.get_figwidth() * 120))

    def colour_at(t: float, kind: str) -> str:
        x, y = fast.transData.transform((t, sum(lane(kind)) / 2))
        return "#%02X%02X%02X" % tuple(pixels[height - 1 - int(y), int(x)])

    assert colour_at(0.5625, "decode") == timeline.COLOURS["decode"]
    assert colour_at(1.1875, "structure") == timeline.COLOURS["structure"]
    assert colour_at(0.875, "io") == timeline.COLOURS["io"]
    assert colour_at(0.875, "decode") == "#FFFFFF"  # between two decodes


@pytest.mark.parametrize("ending,starts", [(".svg", b"<?xml"), (".pdf", b"%PDF")])
def test_the_format_is_the_one_the_ending_names(tmp_path, ending, starts):
    out = tmp_path / f"t{ending}"
    timeline.draw_timeline(RECORD, out)
    assert out.read_bytes().startswith(starts)


def test_a_failed_write_leaves_nothing(tmp_path):
    with pytest.raises(ValueError):
        timeline.draw_timeline(RECORD, tmp_path / "t.notanimage")
    assert list(tmp_path.iterdir()) == []


# --- headrace plot TIMELINE.json ------------------------------------------------------------------------


def test_plot_draws_a_timeline_and_prints_the_table(tmp_path, capsys):
    path, out = write(tmp_path / "t.json", RECORD), tmp_path / "f.png"
    assert main(["plot", str(path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed == timeline.summary_table(RECORD) + f"{out}: 2 panels, one per run\n"
    timeline.draw_timeline(RECORD, tmp_path / "lib.png")
    assert out.read_bytes() == (tmp_path / "lib.png").read_bytes()
    assert main(["plot", str(path), "--out", str(out), "--all-frames"]) == 0
    timeline.draw_timeline(RECORD, tmp_path / "lib.png", all_frames=True)
    assert out.read_bytes() == (tmp_path / "lib.png").read_bytes()


def test_plot_refuses_a_bad_timeline_in_one_line_and_leaves_nothing(tmp_path, capsys):
    reversed_span = copy.deepcopy(RECORD)
    reversed_span["runs"][0]["frames"][0]["spans"]["io"] = [[0.75, 0.0]]
    out = tmp_path / "f.png"
    for name, text, says in (
            ("cut.json", json.dumps(RECORD)[:100], "expected a timeline record of headrace play (JSON), found"),
            ("other.json", '{"format": "something else"}', 'found "something else"'),
            ("reversed.json", json.dumps(reversed_span), "runs[0].frames[0].spans.io[0]: expected start <= end")):
        (tmp_path / name).write_text(text)
        assert main(["plot", str(tmp_path / name), "--out", str(out)]) == 1
        err = one_line_error(capsys)
        assert err.startswith(f"headrace plot: {tmp_path / name}: ") and says in err
    assert not out.exists() and not any(p.name.endswith(".partial") for p in tmp_path.iterdir())


def test_all_frames_is_only_for_a_timeline(tmp_path, capsys):
    results = tmp_path / "r.csv"
    results.write_text("study,implementation,threads,scaling,seconds_min\nscaling,hilbert-user,1,strong,0.5\n")
    assert main(["plot", str(results), "--out", str(tmp_path / "f.png"), "--all-frames"]) == 2
    assert "--all-frames: only for a timeline record" in one_line_error(capsys)
    assert not (tmp_path / "f.png").exists()


def test_the_palette_is_one_distinct_colour_per_kind():
    assert list(timeline.COLOURS) == list(timeline.SPAN_KINDS)
    assert len(set(timeline.COLOURS.values())) == len(timeline.SPAN_KINDS)
