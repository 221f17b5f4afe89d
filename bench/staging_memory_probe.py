"""Which page-locked memory the staging ring should be (issue 15): the first cold pass of a process
idles the disk while ``cuMemHostAlloc`` makes 256 MiB of staging (143 ms). Per kind of memory, the time
to make it, and O_DIRECT reads of the cold file into it (16 threads, 4 MiB each, the disk's lane's
pattern), the kinds alternating round by round:

- ``host_alloc``: ``cudaHostAlloc`` (what the ring uses now);
- ``register_4k``: anonymous memory in 4 KiB pages, touched, then ``cudaHostRegister``;
- ``register_thp``: anonymous memory asked for in 2 MiB pages (``MADV_HUGEPAGE``), touched, registered.

    python3 bench/staging_memory_probe.py FILE [--rounds 3] [--bytes 256M] [--read-bytes 2G]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import mmap
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from headrace.bench.harness import drop_page_cache

MiB = 1 << 20
MADV_HUGEPAGE, MADV_NOHUGEPAGE = 14, 15
libc = ctypes.CDLL(None, use_errno=True)


def anonymous_hugepage_bytes() -> int:
    with open("/proc/self/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith("AnonHugePages:"):
                return int(line.split()[1]) * 1024
    return 0


class Staging:
    """Page-locked host memory of one kind; ``view`` is a writable memoryview of it."""

    def __init__(self, kind: str, size: int) -> None:
        import cupy

        self.kind, self.size = kind, size
        start = time.perf_counter()
        huge_before = anonymous_hugepage_bytes()
        if kind == "host_alloc":  # the runtime's call itself (CuPy's pinned pool would hand back a freed buffer)
            self.address = cupy.cuda.runtime.hostAlloc(size, 0)
            self.view = memoryview((ctypes.c_char * size).from_address(self.address)).cast("B")
        else:
            # 2 MiB more, so that the start can be put on a 2 MiB boundary.
            self.mapping = mmap.mmap(-1, size + 2 * MiB, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            base = ctypes.addressof(ctypes.c_char.from_buffer(self.mapping))
            self.address = (base + 2 * MiB - 1) & ~(2 * MiB - 1)
            advice = MADV_HUGEPAGE if kind == "register_thp" else MADV_NOHUGEPAGE
            if libc.madvise(ctypes.c_void_p(self.address), ctypes.c_size_t(size), advice) != 0:
                raise OSError(ctypes.get_errno(), "madvise")
            self.view = memoryview(self.mapping)[self.address - base:self.address - base + size]
            for offset in range(0, size, 4096):  # fault every page in (the kernel zeroes them)
                self.view[offset] = 0
            cupy.cuda.runtime.hostRegister(self.address, size, 0)
        self.seconds = time.perf_counter() - start
        self.huge_bytes = anonymous_hugepage_bytes() - huge_before

    def close(self) -> None:
        import cupy

        self.view.release()
        if self.kind == "host_alloc":
            cupy.cuda.runtime.freeHost(self.address)
        else:
            cupy.cuda.runtime.hostUnregister(self.address)
            self.mapping.close()


def cold_read(path: str, staging: Staging, read_bytes: int, threads: int = 16, block: int = 4 * MiB) -> float:
    """GB/s of O_DIRECT reads of the file's first read_bytes into the staging, threads reads at once."""
    drop_page_cache([path], everything=True)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    slots = staging.size // block
    try:
        def read(k: int) -> int:
            slot = staging.view[(k % slots) * block:(k % slots + 1) * block]
            return os.preadv(fd, [slot], k * block)

        start = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            done = sum(pool.map(read, range(read_bytes // block)))
        return done / (time.perf_counter() - start) / 1e9
    finally:
        os.close(fd)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--megabytes", type=int, default=256)
    parser.add_argument("--read-megabytes", type=int, default=3000)
    args = parser.parse_args()
    kinds = ["host_alloc", "register_4k", "register_thp"]
    with open("/sys/kernel/mm/transparent_hugepage/enabled") as thp:
        print("transparent huge pages:", thp.read().strip(), flush=True)
    rows: list[dict[str, Any]] = []
    for r in range(args.rounds):
        for kind in kinds[r % 3:] + kinds[:r % 3]:
            staging = Staging(kind, args.megabytes * MiB)
            gbps = cold_read(args.file, staging, args.read_megabytes * MiB)
            rows.append({"round": r, "kind": kind, "make_s": staging.seconds, "huge_bytes": staging.huge_bytes,
                         "cold_gbps": gbps})
            print(json.dumps(rows[-1]), flush=True)
            staging.close()
    for kind in kinds:
        of = [row for row in rows if row["kind"] == kind]
        print(f"{kind:13s} make {statistics.median(r['make_s'] for r in of) * 1e3:7.1f} ms, cold "
              f"{statistics.median(r['cold_gbps'] for r in of):5.2f} GB/s (median of {len(of)})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
