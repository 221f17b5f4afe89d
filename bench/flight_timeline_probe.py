"""Where one pass of ``ds.stream(device=0)`` spends its time, flight by flight (issue 15): each flight's
dispatch, the finisher taking it, its reads landed, its checks, its GPU work issued and done
(``Queue.flight_timeline()``), summed up into how long each stage takes, how many flights read at once
and how full each lane's staging runs; beside KvikIO's POSIX mode on the same file and cache state.

    python3 bench/flight_timeline_probe.py FILE --states hot,cold --options '{"pin_files": "off"}' ... --out DIR

Each options set (JSON, one per argument) makes its own engine: two passes warm it, the third is
recorded. Writes ``timeline-<state>-<k>.csv`` (one row per flight) and ``timeline.json`` under --out.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import time
from pathlib import Path
from typing import Any

import headrace
from headrace.bench.cases.user_stream import drop_caches, kvikio_pass, stream_pass
from headrace.bench.engine import data_region
from headrace.bench.harness import warm_page_cache

STAGES = ("dispatched_s", "taken_s", "landed_s", "checked_s", "issued_s", "done_s")


def one_pass(path: str, options: dict[str, Any]) -> tuple[float, int, list[Any]]:
    """(seconds, raw bytes, the pass's flights) of the user benchmark's loop over every frame."""
    engine = headrace.shared_engine(0, **options)
    before = engine.queue.flight_timeline()
    first = before[-1].number + 1 if before else 0
    start = time.perf_counter()
    raw, _ = stream_pass(path, options)
    seconds = time.perf_counter() - start
    engine.queue.drain()
    return seconds, raw, [f for f in engine.queue.flight_timeline() if f.number >= first]


def time_average(intervals: list[tuple[float, float, float]], start: float, end: float) -> float:
    """Mean over [start, end) of the summed weights of the intervals (begin, end, weight) open then."""
    events = sorted([(b, w) for b, _, w in intervals] + [(e, -w) for _, e, w in intervals])
    level = area = 0.0
    last = start
    for t, change in events:
        t = min(max(t, start), end)
        area += level * (t - last)
        level += change
        last = t
    return area / (end - start) if end > start else 0.0


def summarize(flights: list[Any], seconds: float, raw: int) -> dict[str, Any]:
    summary: dict[str, Any] = {"seconds": seconds, "gbps": raw / seconds / 1e9, "flights": len(flights)}
    if not flights:
        return summary
    start = min(f.dispatched_s for f in flights)
    end = max(f.done_s for f in flights)
    summary["queue_span_s"] = end - start
    for lane, name in ((0, "disk"), (1, "cache")):
        of_lane = [f for f in flights if f.lane == lane]
        if not of_lane:
            continue
        entry: dict[str, Any] = {
            "flights": len(of_lane),
            "median_flight_bytes": statistics.median(f.stored_bytes for f in of_lane),
            "median_reads_per_flight": statistics.median(f.reads for f in of_lane),
        }
        for a, b in zip(STAGES, STAGES[1:]):
            spans = [getattr(f, b) - getattr(f, a) for f in of_lane]
            entry[f"{a[:-2]}_to_{b[:-2]}_ms"] = {"median": statistics.median(spans) * 1e3,
                                                 "p90": sorted(spans)[int(0.9 * (len(spans) - 1))] * 1e3,
                                                 "sum_over_pass": sum(spans) / (end - start)}
        entry["dispatch_gap_ms_median"] = statistics.median(
            (b.dispatched_s - a.dispatched_s) * 1e3 for a, b in zip(of_lane, of_lane[1:])) if len(of_lane) > 1 else 0
        # How many of the lane's flights wait for or do their reads at once, and its staging in use.
        entry["flights_reading_mean"] = time_average([(f.dispatched_s, f.landed_s, 1.0) for f in of_lane], start, end)
        entry["bytes_held_mean"] = time_average([(f.dispatched_s, f.done_s, float(f.stored_bytes)) for f in of_lane], start, end)
        entry["finisher_busy"] = time_average([(f.landed_s, f.issued_s, 1.0) for f in of_lane], start, end)
        entry["gpu_or_completer_mean"] = time_average([(f.issued_s, f.done_s, 1.0) for f in of_lane], start, end)
        summary[name] = entry
    return summary


def write_timeline(path: Path, flights: list[Any]) -> None:
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["number", "lane", "requests", "reads", "stored_bytes", *STAGES])
        for f in flights:
            writer.writerow([f.number, f.lane, f.requests, f.reads, f.stored_bytes, *(f"{getattr(f, s):.6f}" for s in STAGES)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--states", default="hot,cold")
    parser.add_argument("--options", nargs="+", default=["{}"], help="JSON of stream() options, one engine each")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    import cupy

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    buffer = cupy.empty(data_region(args.file)[1], dtype=cupy.uint8)
    results: list[dict[str, Any]] = []
    for k, text in enumerate(args.options):
        options = json.loads(text)
        for state in args.states.split(","):
            prepare = (lambda: drop_caches(args.file)) if state == "cold" else (lambda: warm_page_cache([args.file]))
            for _ in range(2):  # the engine's first pass pays its setup; the second settles the cache state
                prepare()
                one_pass(args.file, options)
            prepare()
            seconds, raw, flights = one_pass(args.file, options)
            prepare()
            start = time.perf_counter()
            kvikio_bytes = kvikio_pass(args.file, True, buffer)
            kvikio_gbps = kvikio_bytes / (time.perf_counter() - start) / 1e9
            write_timeline(out / f"timeline-{state}-{k}.csv", flights)
            summary = {"state": state, "options": options, **summarize(flights, seconds, raw),
                       "kvikio_posix_gbps": kvikio_gbps}
            summary["x_kvikio_posix"] = summary["gbps"] / kvikio_gbps
            results.append(summary)
            print(json.dumps(summary, indent=1), flush=True)
    (out / "timeline.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
