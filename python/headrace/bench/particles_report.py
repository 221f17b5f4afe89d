"""Markdown tables from ``headrace bench particles`` results, for docs/results.md:

    python3 -m headrace.bench.particles_report RESULTS.csv [MORE.csv ...]

Per file, device and cache state: seed 000's figure 5 as a table (wall-clock frame time in ms per method
and batch size, the best over the other factors), the waits for a free segment per frame (figure 9),
the overlap as issue 7 defines it (the best streaming configuration's frame time over max(the vram frame
time, the same configuration streaming without drawing), the two measured in turns), and headrace's best
against the KvikIO peer's.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from headrace.bench.cases.particles import BASELINES
from headrace.bench.harness import read_rows

__all__ = ["report", "main"]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f}"


def report(rows: list[dict[str, str]]) -> str:
    groups: dict[tuple[str, str, str, str], list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        if row.get("frame_seconds"):
            groups[(Path(row["file"]).name, row["particles_per_frame"], row["device"], row["cache"])].append(row)
    out: list[str] = []
    for (name, particles, device, cache), group in sorted(groups.items()):
        batches = sorted({int(r["batch"]) for r in group})
        methods = list(dict.fromkeys(r["method"] for r in group))
        best: dict[tuple[str, int], dict[str, str]] = {}
        for r in group:
            key = (r["method"], int(r["batch"]))
            if key not in best or float(r["frame_seconds"]) < float(best[key]["frame_seconds"]):
                best[key] = r
        out.append(f"### {name}: {int(particles):,} particles per frame, device {device}, {cache}\n")
        out.append("| method | " + " | ".join(f"{b:,} per batch" for b in batches) + " | waits per frame |")
        out.append("|---|" + "---:|" * (len(batches) + 1))
        for m in methods:
            cells = [_ms(float(best[(m, b)]["frame_seconds"])) if (m, b) in best else "" for b in batches]
            waits = [float(best[(m, b)]["segment_waits_per_frame"]) for b in batches if (m, b) in best]
            out.append(f"| {m} | " + " | ".join(cells) + f" | {max(waits):.1f} |")
        out.append("\nframe time in ms (best over segments and staging); waits: the most for a free segment.\n")
        streaming = [r for r in group if r["method"] not in BASELINES]
        if streaming:
            top = min(streaming, key=lambda r: float(r["frame_seconds"]))
            vram = best.get(("vram", int(top["batch"])))
            alone = float(top["stream_only_s"]) if top.get("stream_only_s") else None
            if vram and alone:
                # The frame time paired with the streaming alone (measured in turns), when the row has it.
                drawn = float(top.get("overlap_frame_s") or top["frame_seconds"])
                bound = max(float(vram["frame_seconds"]), alone)
                out.append(f"overlap: {top['method']} at {int(top['batch']):,} per batch, {_ms(drawn)} ms "
                           f"over max(vram {_ms(float(vram['frame_seconds']))} ms, streaming alone {_ms(alone)} ms) = "
                           f"**{drawn / bound:.2f}** (target <= 1.1)\n")
            peers = [r for r in group if r["method"] == "kvikio"]
            if peers:
                peer = min(peers, key=lambda r: float(r["frame_seconds"]))
                out.append(f"against KvikIO: headrace's best {_ms(float(top['frame_seconds']))} ms ({top['method']}), "
                           f"KvikIO {_ms(float(peer['frame_seconds']))} ms: KvikIO / headrace = "
                           f"**{float(peer['frame_seconds']) / float(top['frame_seconds']):.2f}**\n")
    failed = [r for r in rows if r.get("error")]
    if failed:
        out.append("could not run: " + "; ".join(f"{r['method']} ({r['error']})" for r in failed[:6]) + "\n")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m headrace.bench.particles_report", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", metavar="RESULTS.csv")
    args = parser.parse_args(argv)
    rows = [row for path in args.results for row in read_rows(path)]
    print(report(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
