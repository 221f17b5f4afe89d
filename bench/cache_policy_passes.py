"""Passes over one file in one process, as a user who plays a series twice does: ``ds.stream(device=0)`` with
``--policy`` as ``cache_policy`` (the engine's ``auto``, ``keep``, ...), or KvikIO's POSIX reads (16 threads x
16 MiB, its best mode on this disk) into one CuPy buffer. The caller drops the page cache before the first
process; a second process over the same file says what a script run again finds. Prints CSV rows:
file,policy,process,pass,seconds,gbps,bytes_from_disk,bytes_from_cache,cpu_s_per_gb. Issue 39's measurement,
run by memory_tier_on_device.sh."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import cupy as cp

import headrace
from headrace.bench.cases.user_stream import kvikio_pass, stream_pass
from headrace.bench.engine import data_region
from headrace.measurement import process_cpu_seconds


def cpu_seconds() -> float:
    return sum(process_cpu_seconds())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file")
    parser.add_argument("--policy", default="auto", help="a cache_policy of the engine, or kvikio")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--process", type=int, default=1, help="this process's number, for the rows")
    args = parser.parse_args()
    buffer = cp.empty(data_region(args.file)[1], dtype=cp.uint8) if args.policy == "kvikio" else None
    headrace.open(args.file)  # the imports and the index read before the clock, as for KvikIO
    cp.zeros(1)  # CUDA's context too, made before the clock for both (KvikIO's buffer makes it above)
    for number in range(1, args.passes + 1):
        cpu, start = cpu_seconds(), time.perf_counter()
        if buffer is not None:
            delivered, counts = kvikio_pass(args.file, True, buffer), {}
        else:
            delivered, counts = stream_pass(args.file, {"cache_policy": args.policy})
        seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
        print(f"{Path(args.file).name},{args.policy},{args.process},{number},{seconds:.4f},{delivered / seconds / 1e9:.3f},"
              f"{counts.get('bytes_from_disk', '')},{counts.get('bytes_from_cache', '')},{cpu / (delivered / 1e9):.4f}",
              flush=True)
    os._exit(0)  # the engine's teardown is not a pass's


if __name__ == "__main__":
    main()
