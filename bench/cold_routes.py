"""One cold pass over a file by one route, in a fresh process (the caller drops the page cache before it):
where a cold read's CPU goes, by the engine's stages, beside plain readers of the same bytes. Issue 39's
question: which route gives this disk's best cold rate, and what each costs the host.

    python3 bench/cold_routes.py FILE ROUTE

Routes: ``engine:<policy>`` (``ds.stream(device=0, cache_policy=policy)``), ``engine-forced:<backend>``
(the engine with one forced backend: ``posix`` threads, ``uring``; ``HEADRACE_URING_O_DIRECT=0`` makes
uring buffered), ``kvikio`` (POSIX, 16 threads x 16 MiB into one CuPy buffer), and plain buffered preads into
host memory, ``threads:<n>:<MiB>[:seq|:willneed<MiB>][:ring|:pinned]`` (n threads taking chunks in order;
``seq`` advises sequential access, ``willneed<W>`` asks the kernel to read W MiB ahead of the readers; each
thread reads into a buffer of its own, or ``ring``: into a 256 MiB buffer walked through as the engine's
staging is, ``pinned``: the same page-locked by CUDA). Prints one CSV
row: route,seconds,gbps,cpu_user_s,cpu_system_s,cpu_s_per_gb,io,finish,engine,other (the last four in s a GB)."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time

import headrace
from headrace.measurement import cpu_by_stage, process_cpu_seconds


def plain_reads(path: str, spec: str) -> int:
    parts = spec.split(":")
    threads, chunk = int(parts[1]), int(parts[2]) << 20
    advice = next((p for p in parts[3:] if p == "seq" or p.startswith("willneed")), "")
    # Where the bytes land: a buffer a thread reuses (cache-warm), or a 256 MiB ring walked through as the
    # engine's staging is ("ring"), page-locked by CUDA ("pinned").
    ring, pinned = "ring" in parts[3:] or "pinned" in parts[3:], "pinned" in parts[3:]
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    if advice == "seq":
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
    ahead = int(advice[len("willneed"):]) << 20 if advice.startswith("willneed") else 0
    chunks = (size + chunk - 1) // chunk
    taken, advised, lock = [0], [0], threading.Lock()
    ring_bytes = 256 << 20
    if pinned:
        import cupy as cp  # type: ignore[import]  # GPU machines only

        memory = cp.cuda.alloc_pinned_memory(ring_bytes)
        shared = memoryview((ctypes.c_char * ring_bytes).from_address(memory.ptr)).cast("B")
    else:
        shared = memoryview(bytearray(ring_bytes)) if ring else None

    def work() -> None:
        own = memoryview(bytearray(chunk))
        while True:
            with lock:
                index = taken[0]
                taken[0] += 1
                want = min(size, index * chunk + ahead)
                start = advised[0]
                advised[0] = max(advised[0], want)
            if index >= chunks:
                return
            if ahead and want > start:
                os.posix_fadvise(fd, start, want - start, os.POSIX_FADV_WILLNEED)
            if shared is not None:
                at = index * chunk % ring_bytes
                os.preadv(fd, [shared[at:at + chunk]], index * chunk)
            else:
                os.preadv(fd, [own], index * chunk)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    os.close(fd)
    return size


def engine_pass(path: str, options: dict) -> int:
    import cupy as cp  # type: ignore[import]  # GPU machines only

    ds = headrace.open(path)
    raw = 0
    with ds.stream(device=0, **options) as frames:
        for frame in frames:
            for name in frame.fields:
                cp.from_dlpack(frame[name])
            raw += frame.stats.raw_bytes
            frame.release(stream=cp.cuda.get_current_stream().ptr)
        cp.cuda.get_current_stream().synchronize()
        engine_pass.stages = cpu_by_stage().since(engine_pass.before)  # type: ignore[attr-defined]
    return raw


def main() -> None:
    path, route = sys.argv[1], sys.argv[2]
    kind, _, detail = route.partition(":")
    buffer = None
    if kind == "kvikio":
        import cupy as cp  # type: ignore[import]

        from headrace.bench.engine import data_region

        buffer = cp.empty(data_region(path)[1], dtype=cp.uint8)
    if kind.startswith("engine"):
        import cupy  # type: ignore[import]  # GPU machines only

        cupy.empty(1)  # CUDA's context made before the clock, as KvikIO's is by its buffer: the pass is the engine's
        headrace.open(path)
    user, system = process_cpu_seconds()
    engine_pass.before = cpu_by_stage()  # type: ignore[attr-defined]
    engine_pass.stages = {}  # type: ignore[attr-defined]
    start = time.perf_counter()
    if kind == "engine":
        moved = engine_pass(path, {"cache_policy": detail})
    elif kind == "engine-forced":
        moved = engine_pass(path, {"options": headrace.queue_options(backend=detail)})
    elif kind == "kvikio":
        from headrace.bench.cases.user_stream import kvikio_pass

        moved = kvikio_pass(path, True, buffer)
    else:
        moved = plain_reads(path, route)
    seconds = time.perf_counter() - start
    after = process_cpu_seconds()
    gb = moved / 1e9
    stages = engine_pass.stages or cpu_by_stage().since(engine_pass.before)  # type: ignore[attr-defined]
    cpu = after[0] - user + after[1] - system
    print(f"{route},{seconds:.3f},{gb / seconds:.3f},{after[0] - user:.3f},{after[1] - system:.3f},{cpu / gb:.3f},"
          + ",".join(f"{stages[s] / gb:.3f}" for s in ("io", "finish", "engine", "other")), flush=True)
    os._exit(0)  # teardown is not the pass's


if __name__ == "__main__":
    main()
