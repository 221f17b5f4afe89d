"""Where a half-cached pass spends its time (issue 15): per frame, when it was handed out, where its
bytes came from and how long its requests queued and read; the disk's frames should follow one another
at the disk's pace if nothing stalls it.

    python3 bench/half_cached_probe.py FILE [--rounds 2] [--options JSON]
"""

from __future__ import annotations

import argparse
import json
import time

import headrace
from headrace.bench.cases.user_stream import drop_caches, warm_every_other_frame


def one_pass(path: str, options: dict) -> None:
    import cupy

    ds = headrace.open(path)
    stream = cupy.cuda.get_current_stream()
    start = time.perf_counter()
    with ds.stream(device=0, **options) as frames:
        for frame in frames:
            for name in frame.fields:
                cupy.from_dlpack(frame[name])
            s = frame.stats
            print(f"  frame {s.frame}: out at {time.perf_counter() - start:6.3f} s, cache {s.bytes_from_cache >> 20:4d} MiB, "
                  f"disk {s.bytes_from_disk >> 20:4d} MiB, ready after {s.ready_s:6.3f} s, waited {s.consumer_wait_s:6.3f} s, "
                  f"queue wait/req {s.queue_wait_s / max(s.requests, 1) * 1e3:6.2f} ms, io/req {s.io_s / max(s.requests, 1) * 1e3:6.2f} ms",
                  flush=True)
            frame.release(stream=stream.ptr)
        stats = frames.engine.queue.stats()
    stream.synchronize()
    seconds = time.perf_counter() - start
    print(f"  {ds.stored_bytes / seconds / 1e9:.2f} GB/s; flights disk {stats.disk_lane_flights}, cache "
          f"{stats.cache_lane_flights}; staging waits {stats.staging_waits}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--options", default="{}")
    args = parser.parse_args()
    options = json.loads(args.options)
    for r in range(args.rounds):
        print(f"cold, round {r}:", drop_caches(args.file), flush=True)
        one_pass(args.file, options)
        print(f"half, round {r}:", warm_every_other_frame(args.file), flush=True)
        one_pass(args.file, options)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
