"""Where a hot (page-cached) file's bytes can go fastest on this machine, measured with the primitives
alone (CuPy, the C library, KvikIO as the peer): the numbers the engine's hot read path is designed from.

    python3 bench/hot_path_probe.py FILE [--rounds 3]

Each line: what was timed, GB/s of the file's bytes, and the spread over rounds. Nothing of headrace is
used, so this runs before a build.
"""

from __future__ import annotations

import argparse
import ctypes
import mmap
import os
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import cupy
import numpy as np

libc = ctypes.CDLL("libc.so.6", use_errno=True)
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
MiB = 1 << 20


def rate(size: int, seconds: float) -> float:
    return size / seconds / 1e9


def report(name: str, size: int, times: list[float]) -> None:
    rates = sorted(rate(size, t) for t in times)
    print(f"{name:<58} {statistics.median(rates):7.2f} GB/s  [{rates[0]:.2f} .. {rates[-1]:.2f}]", flush=True)


def timed(fn, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def pread_into(fd: int, buffer: memoryview, size: int, threads: int, task: int, pool: ThreadPoolExecutor) -> None:
    def one(offset: int) -> None:
        n = min(task, size - offset)
        got = os.preadv(fd, [buffer[offset:offset + n]], offset)
        assert got == n, (got, n)
    list(pool.map(one, range(0, size, task)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    size = os.path.getsize(args.file)
    fd = os.open(args.file, os.O_RDONLY)
    with open(args.file, "rb") as f:  # make it hot
        while f.read(64 * MiB):
            pass

    # Residency checks: mincore over the whole file, and preadv2(RWF_NOWAIT) of one page per 4 MiB.
    mapping = mmap.mmap(fd, size, prot=mmap.PROT_READ)
    view = np.frombuffer(mapping, dtype=np.uint8)
    address = view.ctypes.data
    pages = (size + 4095) // 4096
    vec = np.zeros(pages, dtype=np.uint8)
    start = time.perf_counter()
    assert libc.mincore(ctypes.c_void_p(address), size, vec.ctypes.data) == 0
    seconds = time.perf_counter() - start
    print(f"mincore over {size >> 20} MiB: {seconds * 1e3:.2f} ms, resident {vec.mean():.3f}", flush=True)
    probe = bytearray(4096)
    start = time.perf_counter()
    misses = 0
    for offset in range(0, size, 4 * MiB):
        try:
            os.preadv(fd, [probe], offset, os.RWF_NOWAIT)
        except BlockingIOError:
            misses += 1
    seconds = time.perf_counter() - start
    print(f"RWF_NOWAIT probes, one per 4 MiB: {seconds * 1e3:.2f} ms, misses {misses}", flush=True)

    # Setup costs: pinned staging by cudaHostAlloc, against populated anonymous memory page-locked.
    start = time.perf_counter()
    staging = cupy.cuda.alloc_pinned_memory(256 * MiB)
    print(f"cudaHostAlloc 256 MiB: {(time.perf_counter() - start) * 1e3:.1f} ms", flush=True)
    start = time.perf_counter()
    anonymous = mmap.mmap(-1, 256 * MiB, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE)
    populated = time.perf_counter() - start
    anonymous_address = np.frombuffer(anonymous, dtype=np.uint8).ctypes.data
    cupy.cuda.runtime.hostRegister(anonymous_address, 256 * MiB, 1)  # cudaHostRegisterPortable
    print(f"mmap(MAP_POPULATE) + cudaHostRegister 256 MiB: {(time.perf_counter() - start) * 1e3:.1f} ms "
          f"(populate {populated * 1e3:.1f} ms)", flush=True)
    cupy.cuda.runtime.hostUnregister(anonymous_address)
    start = time.perf_counter()
    pinned = cupy.cuda.alloc_pinned_memory(size)
    print(f"cudaHostAlloc {size >> 20} MiB: {(time.perf_counter() - start) * 1e3:.1f} ms", flush=True)
    pinned_view = memoryview(np.frombuffer(pinned, dtype=np.uint8, count=size))
    device = cupy.empty(size, dtype=cupy.uint8)
    pageable = np.empty(size, dtype=np.uint8)
    pageable[:] = 1
    pageable_view = memoryview(pageable)

    # H2D from pinned memory: the ceiling.
    def h2d() -> None:
        cupy.cuda.runtime.memcpyAsync(device.data.ptr, pinned.ptr, size, 1, 0)
        cupy.cuda.Device().synchronize()
    h2d()
    report("H2D pinned, one copy", size, timed(h2d, args.rounds))

    for threads in (8, 16, 32):
        with ThreadPoolExecutor(threads) as pool:
            for task in (1 * MiB, 4 * MiB, 16 * MiB):
                report(f"pread hot -> pinned, {threads} threads, {task >> 20} MiB tasks", size,
                       timed(lambda: pread_into(fd, pinned_view, size, threads, task, pool), args.rounds))
            report(f"pread hot -> pageable, {threads} threads, 4 MiB tasks", size,
                   timed(lambda: pread_into(fd, pageable_view, size, threads, 4 * MiB, pool), args.rounds))

    # pread into per-thread pinned bounce buffers, then H2D on the thread's stream (KvikIO's compat path).
    for threads, task in ((16, 4 * MiB), (16, 16 * MiB), (32, 4 * MiB)):
        local = threading.local()

        def bounce(offset: int) -> None:
            if not hasattr(local, "buffer"):
                local.buffer = cupy.cuda.alloc_pinned_memory(task)
                local.view = memoryview(np.frombuffer(local.buffer, dtype=np.uint8, count=task))
                local.stream = cupy.cuda.Stream(non_blocking=True)
            n = min(task, size - offset)
            assert os.preadv(fd, [local.view[:n]], offset) == n
            cupy.cuda.runtime.memcpyAsync(device.data.ptr + offset, local.buffer.ptr, n, 1, local.stream.ptr)
            local.stream.synchronize()
        with ThreadPoolExecutor(threads) as pool:
            report(f"pread -> pinned bounce -> H2D, {threads} threads, {task >> 20} MiB", size,
                   timed(lambda: list(pool.map(bounce, range(0, size, task))), args.rounds))

    # The file's mapping page-locked: the cost, then DMA straight from the page cache.
    del pinned, pinned_view
    start = time.perf_counter()
    cupy.cuda.runtime.hostRegister(address, size, 8)  # cudaHostRegisterReadOnly
    register_s = time.perf_counter() - start
    print(f"cudaHostRegister(read-only) of the mapped file: {register_s * 1e3:.1f} ms = {rate(size, register_s):.2f} GB/s",
          flush=True)

    def dma(copy: int) -> None:
        for offset in range(0, size, copy):
            cupy.cuda.runtime.memcpyAsync(device.data.ptr + offset, address + offset, min(copy, size - offset), 1, 0)
        cupy.cuda.Device().synchronize()
    for copy in (4 * MiB, 64 * MiB):
        report(f"DMA from the page-locked mapping, {copy >> 20} MiB copies", size, timed(lambda: dma(copy), args.rounds))
    start = time.perf_counter()
    cupy.cuda.runtime.hostUnregister(address)
    print(f"cudaHostUnregister: {(time.perf_counter() - start) * 1e3:.1f} ms", flush=True)

    try:
        import kvikio
        import kvikio.defaults
        for compat in (True,):
            kvikio.defaults.set({"compat_mode": compat, "num_threads": 16, "task_size": 16 * MiB})
            with kvikio.CuFile(args.file, "r") as f:
                report(f"KvikIO CuFile.read, compat {compat}, 16 threads, 16 MiB", size,
                       timed(lambda: f.read(device), args.rounds))
    except Exception as error:  # the peer is optional here
        print(f"KvikIO: {error}")
    del staging


if __name__ == "__main__":
    main()
