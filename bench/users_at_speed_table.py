"""Issue 38's one table from a run of users_at_speed_on_device.sh: each user's command beside its yardstick of the
same call and the issue's target, as a Markdown table (medians over the rounds). Usage:
``python3 bench/users_at_speed_table.py OUT_DIR --lines LINES.npz``."""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import statistics
from pathlib import Path

FRAME = re.compile(r"frame (\d+): ([\d.]+) ms \(([\d.]+) ms drawing(?:, [\d.]+ ms between the calls)?\).*?([\d.]+) MB read")
SETUP = re.compile(r"setup: ([\d.]+) ms")


def walls(out: Path, prefix: str) -> list[float]:
    """Wall seconds of the rounds of one command that ended well."""
    with open(out / "users.csv") as f:
        return [float(r["seconds"]) for r in csv.DictReader(f)
                if re.fullmatch(re.escape(prefix) + r"-\d+", r["name"]) and r["exit"] == "0"]


def frames_of(log: Path) -> list[tuple[float, float, float]]:
    """(frame ms, drawing ms, MB read) of each frame a `render --stats` printed."""
    return [(float(m[2]), float(m[3]), float(m[4])) for m in FRAME.finditer(log.read_text())] if log.exists() else []


def logs(out: Path, prefix: str) -> list[Path]:
    return sorted(out.glob(f"{prefix}-[0-9]*.log"))


def json_of(log: Path) -> dict:
    text = log.read_text()
    return json.loads(text[text.index("{"):])


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--lines", type=Path, help="the GPU trace's output (its bytes at the disk's write rate)")
    args = parser.parse_args()
    out = args.out
    ceilings = dict(line.strip().split(",") for line in open(out / "ceilings.csv") if "," in line)
    pinned = float(ceilings["pinned_h2d_gbps"]) * 1e9
    # The disk's read ceiling: the better of dd (QD 1) and headrace probe (its best queue depth).
    disk_read = max(float(ceilings["disk_read_gbps"]), float(ceilings.get("disk_probe_gbps", 0))) * 1e9
    disk_write = float(ceilings["disk_write_gbps"]) * 1e9
    start = median(walls(out, "start"))
    rows: list[tuple[str, str, str, str]] = []

    def row(what: str, measured: str, ratio: float, target: str) -> None:
        rows.append((what, measured, f"{ratio:.2f}", target))

    # One 100 M-particle frame, a fresh process each.
    frames = [frames_of(log)[0] for log in logs(out, "render-p100") if frames_of(log)]
    if frames:
        frame_ms, draw_ms, mb = median([f[0] for f in frames]), median([f[1] for f in frames]), frames[0][2]
        copy_ms = mb * 1e6 / pinned * 1e3
        row("`headrace render p100.hrc --frame 0 --stats`: the frame", f"{frame_ms:.1f} ms (drawing {draw_ms:.1f}); "
            f"{mb / 1e3:.2f} GB / pinned = {copy_ms:.1f} ms", frame_ms / copy_ms, "<= 1.2")
        wall = median(walls(out, "render-p100"))
        setups = [float(m[1]) for log in logs(out, "render-p100") for m in SETUP.finditer(log.read_text())]
        row("the same: command wall minus bare start", f"{wall:.2f} - {start:.2f} s (setup {median(setups):.0f} ms)",
            (wall - start) * 1e3 / copy_ms, "<= 2 (+ the image's write)")
        start_ahead = median(walls(out, "start-ahead"))
        if not math.isnan(start_ahead):  # measured: the bare start with its context made while the package loads
            row("the same minus a bare start that makes its context as the package loads", f"{wall:.2f} - {start_ahead:.2f} s",
                (wall - start_ahead) * 1e3 / copy_ms, "(the command's own overlap taken out)")
    series = [frames_of(log) for log in logs(out, "render-p10m-series") if frames_of(log)]
    if series:
        fps = median([len(s) / (sum(f[0] for f in s) / 1e3) for s in series])
        draw_fps = median([len(s) / (sum(f[1] for f in s) / 1e3) for s in series])
        h2d_fps = pinned / (series[0][0][2] * 1e6)
        row("`headrace render p10m.hrc --frames 0:16 --stats`", f"{fps:.1f} frames/s (drawing alone {draw_fps:.1f}, "
            f"H2D-bound {h2d_fps:.1f})", fps / min(draw_fps, h2d_fps), ">= 0.9")
        series_wall = median(walls(out, "render-p10m-series"))
        row("the same by the command's wall minus bare start (16 images written)",
            f"{len(series[0]) / (series_wall - start):.1f} frames/s ({series_wall:.2f} - {start:.2f} s)",
            len(series[0]) / (series_wall - start) / min(draw_fps, h2d_fps), "(as users see it)")
    # The AMR series, hot and cold.
    for cache in ("hot", "cold"):
        records = [json.load(open(p))["runs"][0] for p in sorted(out.glob(f"play-{cache}-*.json"))]
        if not records:
            continue
        fps = median([r["fps"] for r in records])
        if cache == "hot":
            render_only = median([r["render_only_fps"] for r in records])
            row("`headrace play amr100m.hrc --device 0`, hot", f"{fps:.1f} frames/s, render-only {render_only:.1f}",
                fps / render_only, ">= 0.9")
        else:
            stored = records[0]["stored_bytes"] / len(records[0]["frames"])
            at_disk = disk_read / stored
            row("the same, cold (caches dropped, fresh process)", f"{fps:.1f} frames/s, the disk allows {at_disk:.1f}",
                fps / at_disk, ">= 0.9")
    # Streamlines.
    traces = [json_of(log) for log in logs(out, "trace-gpu")]
    if traces:
        wall = median(walls(out, "trace-gpu"))
        field = os.path.getsize(traces[0]["file"]) if os.path.exists(traces[0]["file"]) else traces[0]["bytes_read"]
        stepping = median([t["resident_advance_seconds"] for t in traces])
        written = args.lines.stat().st_size if args.lines and args.lines.exists() else 0
        budget = field / pinned + stepping + written / disk_write
        command = median([t.get("command_seconds", float("nan")) for t in traces])
        writing = median([t.get("write_seconds", float("nan")) for t in traces])
        traced = median([t["seconds"] for t in traces])
        row("`headrace trace flow256.hrc --seeds uniform:65536 --steps 2000 --device 0`: wall minus bare start",
            f"{wall:.2f} - {start:.2f} s (the command {command:.2f} s: trace {traced:.2f}, writing {writing:.2f}); field at "
            f"pinned + stepping {stepping:.3f} s + {written / 1e6:.0f} MB written = {budget:.2f} s", (wall - start) / budget,
            "<= 1.3")
        cpu = walls(out, "trace-cpu16")
        if cpu:
            row("the same against 16 CPU threads, wall", f"{wall:.2f} s against {cpu[0]:.2f} s", cpu[0] / wall,
                "(held tracer: >= 10)")
        quarter = [json_of(log) for log in logs(out, "trace-gpu-quarter-cache")]
        if quarter:
            resident_s, quarter_s = median([t["seconds"] for t in traces]), median([t["seconds"] for t in quarter])
            row("the field at 4 x the cache (`--cache-bytes 50M`): lines/s", f"trace {quarter_s:.3f} s against resident "
                f"{resident_s:.3f} s", resident_s / quarter_s, ">= 0.5")
    # The stream with a consumer kernel.
    if (out / "overlap.csv").exists():
        rounds: dict[str, list[float]] = {}  # the cold cases come in rounds, the stream and both alternating
        for r in csv.DictReader(open(out / "overlap.csv")):
            rounds.setdefault(r["what"], []).append(float(r["seconds"]))
        seconds = {what: median(values) for what, values in rounds.items()}
        if {"stream", "kernel", "both"} <= seconds.keys():
            row("`ds.stream(device=0)` + a CuPy kernel a frame, hot", f"both {seconds['both']:.3f} s, stream "
                f"{seconds['stream']:.3f}, kernel {seconds['kernel']:.3f}",
                seconds["both"] / max(seconds["stream"], seconds["kernel"]), "<= 1.05")
        if {"stream-cold", "both-cold", "kernel"} <= seconds.keys():
            row("the same, cold", f"both {seconds['both-cold']:.3f} s, stream {seconds['stream-cold']:.3f} (medians of "
                f"{len(rounds['both-cold'])})",
                seconds["both-cold"] / max(seconds["stream-cold"], seconds["kernel"]), "<= 1.05")
    # Compressed particles, cold.
    plain = [frames_of(log)[0][0] for log in logs(out, "render-p100-cold") if frames_of(log)]
    packed = [frames_of(log)[0][0] for log in logs(out, "render-p100-gdeflate-cold") if frames_of(log)]
    if plain and packed:
        row("100 M particles cold: GDeflate frame against the plain file's", f"{median(packed):.0f} ms against "
            f"{median(plain):.0f} ms", median(packed) / median(plain), "<= 0.9")

    print(f"pinned H2D {pinned / 1e9:.1f} GB/s, disk read {disk_read / 1e9:.2f} GB/s, write {disk_write / 1e9:.2f} GB/s, "
          f"bare process start {start:.2f} s (median of the rounds)\n")
    print("| what the user ran | measured | ratio | target |\n|---|---|---:|---|")
    for what, measured, ratio, target in rows:
        print(f"| {what} | {measured} | {ratio} | {target} |")


if __name__ == "__main__":
    main()
