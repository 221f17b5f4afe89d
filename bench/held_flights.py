"""Where a held pass's time goes, flight by flight: ``ds.stream(device=0)`` over FILE ``--passes`` times in
one process (the first from the disk, held; the later ones from the held copy), then the queue's flight
timeline of the last pass (``Queue.flight_timeline``) written to ``--csv`` and summed up: how long a
flight waits to be taken, to be issued, for its GPU work, and how much of the pass the GPU had work
issued. Issue 39's held zstd passes (0.52 x nvCOMP's decode rate), run by memory_tier_on_device.sh."""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import time

import cupy as cp

import headrace


def busy_seconds(spans: list[tuple[float, float]]) -> float:
    """The time covered by the union of ``spans``."""
    covered, end = 0.0, float("-inf")
    for start, stop in sorted(spans):
        if stop > end:
            covered += stop - max(start, end)
            end = stop
    return covered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--csv", required=True, help="the last pass's flights")
    parser.add_argument("--label", default="", help="names the summary line")
    args = parser.parse_args()
    ds = headrace.open(args.file)
    stream = cp.cuda.get_current_stream()
    cp.zeros(1)  # CUDA's context before the clock
    for number in range(1, args.passes + 1):  # the process's engine, and so its held copy, lives across streams
        raw, start = 0, time.perf_counter()
        with ds.stream(device=0) as frames:
            queue = frames.engine.queue
            seen = max((f.number for f in queue.flight_timeline()), default=-1)
            for frame in frames:
                raw += frame.stats.raw_bytes
                frame.release(stream=stream.ptr)
        stream.synchronize()
        seconds = time.perf_counter() - start
        print(f"{args.label} pass {number}: {raw / seconds / 1e9:.2f} GB/s ({raw / 1e9:.2f} GB in {seconds:.3f} s)", flush=True)
    flights = [f for f in queue.flight_timeline() if f.number > seen]
    keys = ("number", "lane", "requests", "reads", "stored_bytes", "dispatched_s", "taken_s", "landed_s", "checked_s", "issued_s",
            "done_s")
    with open(args.csv, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(keys)
        for f in flights:
            writer.writerow([getattr(f, k) for k in keys])
    if flights:
        first, last = min(f.dispatched_s for f in flights), max(f.done_s for f in flights)
        med = lambda values: statistics.median(values) * 1e3  # noqa: E731
        print(f"{args.label} last pass: {len(flights)} flights, {statistics.median([f.stored_bytes for f in flights]) / 1e6:.1f} MB stored a flight "
              f"(median); ms a flight, median: dispatched to taken {med([f.taken_s - f.dispatched_s for f in flights]):.2f}, "
              f"taken to issued {med([f.issued_s - f.taken_s for f in flights]):.2f}, issued to done "
              f"{med([f.done_s - f.issued_s for f in flights]):.2f}; the GPU had work issued "
              f"{busy_seconds([(f.issued_s, f.done_s) for f in flights]) / (last - first):.2f} of the flights' "
              f"{(last - first) * 1e3:.0f} ms", flush=True)
    os._exit(0)  # the engine's teardown is not a pass's


if __name__ == "__main__":
    main()
