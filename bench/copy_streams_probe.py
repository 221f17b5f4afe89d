"""Does one copy stream hold back H2D copies while threads read the page cache? (issue 15: the page
cache's lane of a file not page-locked runs at two thirds of KvikIO's POSIX mode, and its flight
timeline shows the copy stage always busy.) Threads read the hot file (buffered, 4 MiB each) into
page-locked buffers and copy each to one GPU buffer, the copies on one shared stream or on a stream
per thread (as KvikIO does); beside reads alone and copies alone.

    python3 bench/copy_streams_probe.py FILE [--threads 16] [--rounds 3]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import threading
import time

from headrace.bench.engine import data_region
from headrace.bench.harness import warm_page_cache

MiB = 1 << 20


def run(path: str, mode: str, threads: int, streams: int, block: int = 4 * MiB) -> float:
    import cupy

    offset, size = data_region(path)
    size -= size % block
    device = cupy.empty(size, dtype=cupy.uint8)
    slots = 4  # buffers per thread: a slot is reused once its copy is done
    pinned = cupy.cuda.alloc_pinned_memory(threads * slots * block)
    shared = [cupy.cuda.Stream(non_blocking=True) for _ in range(streams)]
    fd = os.open(path, os.O_RDONLY)
    tasks = list(range(size // block))
    lock = threading.Lock()

    def worker(t: int) -> None:
        stream = shared[t % streams]
        events = [None] * slots
        k = 0
        while True:
            with lock:
                if not tasks:
                    break
                task = tasks.pop(0)
            slot = k % slots
            k += 1
            if events[slot] is not None:
                events[slot].synchronize()
            address = pinned.ptr + (t * slots + slot) * block
            if mode != "copies":
                view = memoryview((ctypes.c_char * block).from_address(address)).cast("B")
                os.preadv(fd, [view], offset + task * block)
            if mode != "reads":
                cupy.cuda.runtime.memcpyAsync(device.data.ptr + task * block, address, block, 1, stream.ptr)
                events[slot] = stream.record()
        for event in events:
            if event is not None:
                event.synchronize()

    start = time.perf_counter()
    workers = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    seconds = time.perf_counter() - start
    os.close(fd)
    return size / seconds / 1e9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    warm_page_cache([args.file])
    cases = [("reads", 1), ("copies", 1), ("copies", 4), ("both", 1), ("both", 2), ("both", 4), ("both", args.threads)]
    results: dict[str, list[float]] = {}
    for r in range(args.rounds):
        for mode, streams in cases:
            name = f"{mode}, {streams} stream(s)"
            results.setdefault(name, []).append(run(args.file, mode, args.threads, streams))
    for name, values in results.items():
        print(f"{name:24s} {statistics.median(values):6.2f} GB/s  {[round(v, 1) for v in values]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
