"""How each reader keeps the disk busy in a cold pass (issue 15): headrace's defaults against KvikIO's
modes over the same file, from its block device's own counters (/sys/dev/block/M:m/stat) around each pass
and a sampler process reading them every 2 ms: the device's busy fraction, the mean queue depth, the
mean request size and latency, the rate between 10 % and 90 % of the bytes, and where the device idled.

    python3 bench/disk_queue_probe.py FILE [--rounds 3] [--options JSON ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from headrace.bench.cases.user_stream import drop_caches, kvikio_pass, stream_pass

SAMPLER = """
import sys, time
path, out = sys.argv[1], open(sys.argv[2], "w")
while True:
    fields = open(path).read().split()
    out.write(f"{time.perf_counter()} {fields[2]} {fields[8]}\\n")
    out.flush()
    time.sleep(0.002)
"""


def stat(counters: str) -> list[int]:
    with open(counters) as f:
        return [int(x) for x in f.read().split()]


def idle_report(points: list[tuple[float, int, int]], seconds: float) -> str:
    """Where the device had no read in flight (samples 2 ms apart): before the first read, after the
    last, and the longest gaps between."""
    busy = [t for t, _, inflight in points if inflight > 0]
    if not busy:
        return "never busy"
    gaps, start = [], None
    for t, _, inflight in points:
        if busy[0] <= t <= busy[-1]:
            if inflight == 0 and start is None:
                start = t
            elif inflight > 0 and start is not None:
                gaps.append((t - start, start))
                start = None
    gaps.sort(reverse=True)
    middle = sum(g for g, _ in gaps)
    longest = ", ".join(f"{g * 1e3:.0f} ms at {at * 1e3:.0f}" for g, at in gaps[:3])
    return (f"idle {busy[0] * 1e3:.0f} ms before the first read, {(seconds - busy[-1]) * 1e3:.0f} ms after the last, "
            f"{middle * 1e3:.0f} ms between ({longest or 'none'})")


def one_pass(name: str, body, counters: str) -> None:
    samples = tempfile.NamedTemporaryFile("r", suffix=".txt", delete=False)
    sampler = subprocess.Popen([sys.executable, "-c", SAMPLER, counters, samples.name])
    try:
        time.sleep(0.1)
        before, start = stat(counters), time.perf_counter()
        body()
        seconds = time.perf_counter() - start
        after = stat(counters)
    finally:
        sampler.terminate()
        sampler.wait()
    d = [a - b for a, b in zip(after, before)]
    ios, sectors, read_ms, busy_ms, queue_ms = d[0], d[2], d[3], d[9], d[10]
    rows = [line.split() for line in open(samples.name)]
    points = [(float(t) - start, int(s) - before[2], int(i)) for t, s, i in (r for r in rows if len(r) == 3)]
    os.unlink(samples.name)
    points = [p for p in points if 0 <= p[0] <= seconds]
    total = max(sectors, 1)
    t10 = next((t for t, s, _ in points if s >= 0.1 * total), float("nan"))
    t90 = next((t for t, s, _ in points if s >= 0.9 * total), float("nan"))
    steady = 0.8 * total * 512 / (t90 - t10) / 1e9 if t90 > t10 else float("nan")
    print(f"  {name:<18.40} {sectors * 512 / seconds / 1e9:5.2f} GB/s over {seconds:5.3f} s; device busy "
          f"{busy_ms / 1e3 / seconds:4.2f}, mean depth {queue_ms / 1e3 / seconds:5.1f}, {ios} reads of "
          f"{sectors * 512 / max(ios, 1) / 2**20:4.2f} MiB, {read_ms / max(ios, 1):6.1f} ms each; 10-90 % at "
          f"{steady:5.2f} GB/s; {idle_report(points, seconds)}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--options", nargs="*", default=[], help="JSON of stream() options: more headrace readers")
    args = parser.parse_args()
    import cupy

    from headrace.bench.engine import data_region

    st = os.stat(args.file)
    counters = f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/stat"  # the file's partition or disk
    buffer = cupy.empty(data_region(args.file)[1], dtype=cupy.uint8)
    readers = [("headrace defaults", lambda: stream_pass(args.file, {})),
               ("kvikio posix", lambda: kvikio_pass(args.file, True, buffer)),
               ("kvikio cufile", lambda: kvikio_pass(args.file, False, buffer))]
    for text in args.options:
        readers.append((f"headrace {text}", lambda options=json.loads(text): stream_pass(args.file, options)))
    for r in range(args.rounds):
        print(f"round {r}", flush=True)
        turn = r % len(readers)
        for name, body in readers[turn:] + readers[:turn]:
            drop_caches(args.file)
            one_pass(name, body, counters)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
