"""Markdown tables from ``headrace bench particles`` results, for docs/results.md:

    python3 -m headrace.bench.particles_report RESULTS.csv [MORE.csv ...]

Per file, device and cache state: the wall-clock frame time in ms per method and batch size (the best
over the other factors), the waits for a free segment per frame, the overlap (the best streaming
configuration's frame time over max(the vram frame time, the same configuration streaming without
drawing), the two measured in turns; a series is also set
against single frames streamed alone, when the results hold both), and headrace's best
against the KvikIO peer's: like for like, the best method that reads the file during the frame, as the
peer does (the in-memory methods are reported beside it, not compared). A sample of the space (``headrace
bench particles --sample N``) is listed by its best configurations and set against the grid's best.

With ``--ceiling probe.json`` (``headrace probe --json`` of the same call) and ``--h2d h2d.json``
(``python3 -m headrace.bench.cases.h2d_ceilings``), each table also gives its throughput over the
yardstick of its cache state: cold, the best file reader's stored bytes per second over the disk's
O_DIRECT ceiling; hot, ram-pinned's over the H2D rate from a page-locked file.

Where this comes from: the tables are those of Müller and Ertl, "Quantifying Performance Gains of
DirectStorage for the Visualisation of Time-Dependent Particle Data Sets" (docs/particles.md).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from headrace.bench.cases.particles import BASELINES, IN_MEMORY
from headrace.bench.harness import read_rows

__all__ = ["report", "main"]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


def _gbps(row: dict[str, str]) -> float:
    return float(row["stored_bytes_per_frame"]) / float(row["frame_seconds"]) / 1e9


def _fastest(rows: list[dict[str, str]]) -> dict[str, str] | None:
    return min(rows, key=lambda r: float(r["frame_seconds"])) if rows else None


def _heading(name: str, particles: str, device: str, cache: str) -> str:
    mean = float(particles)  # a series of frames of different sizes: the mean
    said = f"{int(mean):,}" if mean.is_integer() else f"{mean:,.2f} (mean)"
    return f"### {name}: {said} particles per frame, device {device}, {cache}\n"


def _sample(name: str, particles: str, device: str, cache: str, group: list[dict[str, str]],
            groups: dict[tuple[str, str, str, str], list[dict[str, str]]]) -> list[str]:
    """A sample of the factor space (the paper's wish): its best configurations, and its best over the best
    of the grid of the same file and cache state, when the results hold one."""
    ranked = sorted((r for r in group if r["method"] not in BASELINES), key=lambda r: float(r["frame_seconds"]))
    out = [_heading(name, particles, device, cache),
           "| rank | method | particles per batch | in flight | staging | ms per frame |", "|---:|---|---:|---:|---:|---:|"]
    for n, r in enumerate(ranked[:5], 1):
        out.append(f"| {n} | {r['method']} | {int(r['batch']):,} | {r['segments']} | {int(r['staging_bytes']) >> 20} MiB "
                   f"| {_ms(float(r['frame_seconds']))} |")
    grid = [r for r in groups.get((name, particles, device, cache.split(", sample of ")[0]), []) if r["method"] not in BASELINES]
    best = _fastest(grid)
    if ranked and best:
        out.append(f"\nthe sample's best over the grid's best: {_ms(float(ranked[0]['frame_seconds']))} ms "
                   f"({len(ranked)} configurations drawn) over {_ms(float(best['frame_seconds']))} ms ({best['method']}, "
                   f"{int(best['batch']):,} per batch, {best['segments']} in flight; {len(grid)} configurations) = "
                   f"**{float(ranked[0]['frame_seconds']) / float(best['frame_seconds']):.2f}**")
    return out + [""]


def report(rows: list[dict[str, str]], ceiling: dict | None = None, h2d: dict | None = None) -> str:
    """Markdown for results rows; ``ceiling`` and ``h2d``: the yardsticks measured in the same call."""
    groups: dict[tuple[str, str, str, str], list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        if row.get("frame_seconds"):
            cache = row["cache"] + (", series" if row.get("series") == "True" else "")
            if row.get("design", "grid") != "grid":
                cache += f", {row['design']}"
            groups[(Path(row["file"]).name, row["particles_per_frame"], row["device"], cache)].append(row)
    out: list[str] = []
    yardsticks = []
    if ceiling:
        yardsticks.append(f"disk {ceiling['ceiling']['gigabytes_per_second']:.2f} GB/s "
                          f"({ceiling['ceiling_line'].removeprefix('device ceiling: ')})")
    if h2d:
        yardsticks.append(f"pinned H2D {h2d['pinned_alloc']['best_gbps']:.1f} GB/s, "
                          f"from the page-locked file {h2d['pinned_file']['whole']['best_gbps']:.1f} GB/s")
    if yardsticks:
        out.append("yardsticks of this call: " + "; ".join(yardsticks) + "\n")
    for (name, particles, device, cache), group in sorted(groups.items()):
        if ", sample of " in cache:
            out.extend(_sample(name, particles, device, cache, group, groups))
            continue
        batches = sorted({int(r["batch"]) for r in group})
        methods = list(dict.fromkeys(r["method"] for r in group))
        best: dict[tuple[str, int], dict[str, str]] = {}
        for r in group:
            key = (r["method"], int(r["batch"]))
            if key not in best or float(r["frame_seconds"]) < float(best[key]["frame_seconds"]):
                best[key] = r
        out.append(_heading(name, particles, device, cache))
        out.append("| method | " + " | ".join(f"{b:,} per batch" for b in batches) + " | waits per frame |")
        out.append("|---|" + "---:|" * (len(batches) + 1))
        for m in methods:
            cells = [_ms(float(best[(m, b)]["frame_seconds"])) if (m, b) in best else "" for b in batches]
            waits = [float(best[(m, b)]["segment_waits_per_frame"]) for b in batches if (m, b) in best]
            label = f"{m} (in memory)" if m in IN_MEMORY else m
            out.append(f"| {label} | " + " | ".join(cells) + f" | {max(waits):.1f} |")
        out.append("\nframe time in ms (best over segments and staging); waits: the most for a free segment; "
                   "in memory: the file is held in RAM before the clock" + (", so a cold cache does not reach it"
                                                                           if cache == "cold" else "")
                   + ("; series: each frame loads the next one's batches while it is drawn" if "series" in cache else "")
                   + ".\n")
        streaming = [r for r in group if r["method"] not in BASELINES]
        top = _fastest(streaming)
        if top:
            vram = best.get(("vram", int(top["batch"])))
            alone = float(top["stream_only_s"]) if top.get("stream_only_s") else None
            if vram and alone:
                # The frame time paired with the streaming alone (measured in turns), when the row has it.
                drawn = float(top.get("overlap_frame_s") or top["frame_seconds"])
                bound = max(float(vram["frame_seconds"]), alone)
                out.append(f"overlap: {top['method']} at {int(top['batch']):,} per batch, {_ms(drawn)} ms "
                           f"over max(vram {_ms(float(vram['frame_seconds']))} ms, streaming alone {_ms(alone)} ms) = "
                           f"**{drawn / bound:.2f}** (target <= 1.1)\n")
            single = groups.get((name, particles, device, cache.removesuffix(", series")), []) if "series" in cache else []
            paired = [r for r in single if (r["method"], r["batch"]) == (top["method"], top["batch"]) and r.get("stream_only_s")]
            single_top = _fastest([r for r in single if r["method"] not in BASELINES])
            if vram and paired and single_top:
                # A series loads ahead when it streams alone too; against a single frame streamed alone, its
                # ratio cannot gain from a slower half.
                drawn = float(top.get("overlap_frame_s") or top["frame_seconds"])
                alone = min(float(r["stream_only_s"]) for r in paired)
                out.append(f"against single frames of this call: the series' {_ms(drawn)} ms over max(vram "
                           f"{_ms(float(vram['frame_seconds']))} ms, a single frame streamed alone {_ms(alone)} ms) = "
                           f"**{drawn / max(float(vram['frame_seconds']), alone):.2f}**; single frames streamed and drawn: "
                           f"best {_ms(float(single_top['frame_seconds']))} ms ({single_top['method']})\n")
            if float(top.get("h2d_s_per_frame") or 0) > 0:  # the CPU renderer copies nothing
                h2d_s = float(top["h2d_s_per_frame"])
                out.append(f"its copies: the copy stream busy {_ms(h2d_s)} ms of the {_ms(float(top['frame_seconds']))} ms "
                           f"frame ({float(top['stored_bytes_per_frame']) / h2d_s / 1e9:.1f} GB/s while copying)\n")
        readers = _fastest([r for r in streaming if r["method"] not in IN_MEMORY])
        peer = _fastest([r for r in group if r["method"] == "kvikio"])
        if peer and readers:
            out.append(f"against KvikIO, both reading the file during the frame: headrace's best "
                       f"{_ms(float(readers['frame_seconds']))} ms ({readers['method']}, {int(readers['batch']):,} per batch), "
                       f"KvikIO {_ms(float(peer['frame_seconds']))} ms: KvikIO / headrace = "
                       f"**{float(peer['frame_seconds']) / float(readers['frame_seconds']):.2f}**"
                       + (f"; headrace's best in memory, {top['method']}: {_ms(float(top['frame_seconds']))} ms"
                          if top and top["method"] in IN_MEMORY else "") + "\n")
        if cache == "cold" and ceiling and readers:
            disk = ceiling["ceiling"]["gigabytes_per_second"]
            out.append(f"over the disk: {readers['method']} reads {_gbps(readers):.2f} GB/s of stored bytes, "
                       f"**{_gbps(readers) / disk:.2f}** x the probe's {disk:.2f} GB/s\n")
        pinned = _fastest([r for r in group if r["method"] == "ram-pinned"])
        if cache.startswith("hot") and h2d and pinned:
            dma = h2d["pinned_file"]["whole"]["best_gbps"]
            out.append(f"over the H2D path: ram-pinned delivers {_gbps(pinned):.1f} GB/s, **{_gbps(pinned) / dma:.2f}** x "
                       f"a page-locked file's {dma:.1f} GB/s\n")
    failed = [r for r in rows if r.get("error")]
    if failed:
        out.append("could not run: " + "; ".join(f"{r['method']} ({r['error']})" for r in failed[:6]) + "\n")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m headrace.bench.particles_report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", metavar="RESULTS.csv")
    parser.add_argument("--ceiling", metavar="PROBE.json", help="headrace probe --json of the same call")
    parser.add_argument("--h2d", metavar="H2D.json", help="headrace.bench.cases.h2d_ceilings of the same call")
    args = parser.parse_args(argv)
    rows = [row for path in args.results for row in read_rows(path)]
    loaded = [json.loads(Path(p).read_text()) if p else None for p in (args.ceiling, args.h2d)]
    print(report(rows, *loaded))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
