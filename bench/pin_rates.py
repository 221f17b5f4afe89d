"""What page-locking a page-cached file costs, and whether threads make it cheaper (issue 38: a one-frame
``headrace render`` pays page-locking 3.2 GB in its setup and unlocking it at exit). Through CUDA's driver
API (ctypes, which releases the GIL) on a read-only mapping of FILE, each line a median of --rounds:

- ``register``: cuMemHostRegister of the whole mapping from one thread, then cuMemHostUnregister;
- ``populate xT + register``: the page tables filled first by T threads (MADV_POPULATE_READ over T
  ranges), then one registration;
- ``pieces xT``: T registrations of T ranges, made and unmade by T threads at once;
- ``across pieces``: a copy to the GPU of 64 MiB straddling two registered pieces (its rate, or the driver's refusal);
- ``exit``: a child process that registers the file and ends without unregistering (os._exit), against
  one that unregisters first, each timed from its registration to its end;
- ``progressive xP``: P parts registered one after another on one thread while the main thread copies each
  part to the GPU as soon as it is registered: from the start to the last copy, against registering the
  whole file and then copying it;
- ``beside registration``: what a registration does to copies made meanwhile by other threads: pinned
  H2D (from a page-locked buffer) and memcpy out of the file's mapped pages (the staging lane's two
  halves), their GB/s while the file is registered against alone;
- ``queued``: 2 GiB of pinned H2D queued on a stream before the file's registration starts, timed by the
  stream's events, against the same queue alone (does the copy engine stall, or only the driver's calls?);
  and ``progressive async xP``: P parts registered one after another on one thread, each part's copy queued
  on a stream as soon as it is registered (nothing waits until the end), against registering whole and then
  copying.
"""

from __future__ import annotations

import argparse
import ctypes
import mmap
import os
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

MADV_POPULATE_READ = 22


class Driver:
    def __init__(self, device: int = 0) -> None:
        self.cuda = ctypes.CDLL("libcuda.so.1")
        self._check(self.cuda.cuInit(0), "cuInit")
        handle = ctypes.c_int()
        self._check(self.cuda.cuDeviceGet(ctypes.byref(handle), device), "cuDeviceGet")
        self.context = ctypes.c_void_p()
        self._check(self.cuda.cuDevicePrimaryCtxRetain(ctypes.byref(self.context), handle), "cuDevicePrimaryCtxRetain")
        self.current()

    def current(self) -> None:
        self._check(self.cuda.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")

    @staticmethod
    def _check(status: int, what: str) -> None:
        if status != 0:
            raise RuntimeError(f"{what}: CUDA error {status}")

    def register(self, address: int, size: int) -> None:
        # CU_MEMHOSTREGISTER_READ_ONLY: a read-only mapping is refused without it (as the engine registers files)
        self._check(self.cuda.cuMemHostRegister_v2(ctypes.c_void_p(address), ctypes.c_size_t(size), 8), "cuMemHostRegister")

    def unregister(self, address: int) -> None:
        self._check(self.cuda.cuMemHostUnregister(ctypes.c_void_p(address)), "cuMemHostUnregister")

    def alloc(self, size: int) -> int:
        pointer = ctypes.c_uint64()
        self._check(self.cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(size)), "cuMemAlloc")
        return pointer.value

    def alloc_host(self, size: int) -> int:
        pointer = ctypes.c_void_p()
        self._check(self.cuda.cuMemAllocHost_v2(ctypes.byref(pointer), ctypes.c_size_t(size)), "cuMemAllocHost")
        return pointer.value

    def stream(self) -> int:
        handle = ctypes.c_void_p()
        self._check(self.cuda.cuStreamCreate(ctypes.byref(handle), 1), "cuStreamCreate")  # non-blocking
        return handle.value

    def event(self) -> int:
        handle = ctypes.c_void_p()
        self._check(self.cuda.cuEventCreate(ctypes.byref(handle), 0), "cuEventCreate")
        return handle.value

    def record(self, event: int, stream: int) -> None:
        self._check(self.cuda.cuEventRecord(ctypes.c_void_p(event), ctypes.c_void_p(stream)), "cuEventRecord")

    def elapsed(self, start: int, end: int) -> float:
        self._check(self.cuda.cuEventSynchronize(ctypes.c_void_p(end)), "cuEventSynchronize")
        milliseconds = ctypes.c_float()
        self._check(self.cuda.cuEventElapsedTime(ctypes.byref(milliseconds), ctypes.c_void_p(start), ctypes.c_void_p(end)),
                    "cuEventElapsedTime")
        return milliseconds.value / 1e3

    def copy_async(self, device_pointer: int, address: int, size: int, stream: int) -> None:
        self._check(self.cuda.cuMemcpyHtoDAsync_v2(ctypes.c_uint64(device_pointer), ctypes.c_void_p(address),
                                                   ctypes.c_size_t(size), ctypes.c_void_p(stream)), "cuMemcpyHtoDAsync")

    def synchronize(self, stream: int) -> None:
        self._check(self.cuda.cuStreamSynchronize(ctypes.c_void_p(stream)), "cuStreamSynchronize")

    def copy_to_device(self, device_pointer: int, address: int, size: int) -> None:
        self._check(self.cuda.cuMemcpyHtoD_v2(ctypes.c_uint64(device_pointer), ctypes.c_void_p(address),
                                              ctypes.c_size_t(size)), "cuMemcpyHtoD")


def mapped(path: str) -> tuple[mmap.mmap, int, int]:
    """A read-only shared mapping of the file and its address (through NumPy: a read-only mmap exports no
    writable buffer for ctypes)."""
    size = os.path.getsize(path)
    with open(path, "rb") as file:
        mapping = mmap.mmap(file.fileno(), size, prot=mmap.PROT_READ)
    return mapping, int(np.frombuffer(mapping, dtype=np.uint8).ctypes.data), size


def ranges(size: int, parts: int, align: int = 2 << 20) -> list[tuple[int, int]]:
    step = -(-size // parts // align) * align
    return [(start, min(step, size - start)) for start in range(0, size, step)]


def in_threads(work, items) -> float:
    start = time.perf_counter()
    threads = [threading.Thread(target=work, args=item) for item in items]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start


def child(path: str, unregister: bool) -> None:
    driver = Driver()
    mapping, address, size = mapped(path)
    driver.register(address, size)
    print(time.time(), flush=True)
    if unregister:
        driver.unregister(address)
    os._exit(0)


def progressive(driver: Driver, path: str, timed) -> None:
    """Whole then copied, against parts registered on a thread and each copied once registered."""
    mapping, address, size = mapped(path)
    device = driver.alloc(size)
    start = time.perf_counter()
    driver.register(address, size)
    driver.copy_to_device(device, address, size)
    timed("whole: register + copy", time.perf_counter() - start)
    driver.unregister(address)
    mapping.close()
    for parts in (8, 32):
        mapping, address, size = mapped(path)
        pieces = ranges(size, parts)
        registered = [threading.Event() for _ in pieces]

        def register_all() -> None:
            driver.current()
            for (offset, length), done in zip(pieces, registered):
                driver.register(address + offset, length)
                done.set()

        start = time.perf_counter()
        thread = threading.Thread(target=register_all)
        thread.start()
        for (offset, length), done in zip(pieces, registered):
            done.wait()
            driver.copy_to_device(device + offset, address + offset, length)
        thread.join()
        timed(f"progressive x{parts}: register + copy", time.perf_counter() - start)
        for offset, _ in pieces:
            driver.unregister(address + offset)
        mapping.close()
    driver.cuda.cuMemFree_v2(ctypes.c_uint64(device))


def beside(driver: Driver, path: str, timed) -> None:
    """Pinned H2D and memcpy out of mapped pages, alone and while the file is being registered."""
    chunk = 64 << 20
    pinned, device = driver.alloc_host(chunk), driver.alloc(chunk)
    staging = np.ctypeslib.as_array((ctypes.c_uint8 * chunk).from_address(pinned))
    mapping, address, size = mapped(path)
    pages = np.frombuffer(mapping, dtype=np.uint8)

    def h2d(stop: threading.Event, moved: list[int]) -> None:
        driver.current()
        while not stop.is_set():
            driver.copy_to_device(device, pinned, chunk)
            moved[0] += chunk

    def copy_out(stop: threading.Event, moved: list[int]) -> None:
        at = 0
        while not stop.is_set():
            np.copyto(staging, pages[at:at + chunk])  # releases the GIL
            moved[0] += chunk
            at = (at + chunk) % (size - chunk)

    for name, work in (("pinned H2D", h2d), ("memcpy from mapped pages", copy_out)):
        for during in (False, True):
            stop, moved = threading.Event(), [0]
            thread = threading.Thread(target=work, args=(stop, moved))
            start = time.perf_counter()
            thread.start()
            if during:
                driver.register(address, size)
            else:
                time.sleep(0.12)
            seconds = time.perf_counter() - start
            stop.set()
            thread.join()
            if during:
                driver.unregister(address)
            timed(f"{name} {'during registration' if during else 'alone'} GB/s", moved[0] / seconds / 1e9)
    del pages  # the mapping closes once nothing views it
    mapping.close()
    driver.cuda.cuMemFreeHost(ctypes.c_void_p(pinned))
    driver.cuda.cuMemFree_v2(ctypes.c_uint64(device))


def queued(driver: Driver, path: str, timed) -> None:
    """Copies queued ahead of a registration, and a file registered part by part with each part's copy queued."""
    chunk, count = 64 << 20, 32
    pinned, device = driver.alloc_host(chunk), driver.alloc(chunk)
    stream, begin, end = driver.stream(), driver.event(), driver.event()
    for during in (False, True):
        mapping, address, size = mapped(path)
        driver.record(begin, stream)
        for _ in range(count):
            driver.copy_async(device, pinned, chunk, stream)
        driver.record(end, stream)
        start = time.perf_counter()
        if during:
            driver.register(address, size)
            timed("queued: the registration beside them s", time.perf_counter() - start)
        timed(f"queued 2 GiB H2D {'during registration' if during else 'alone'} GB/s",
              count * chunk / driver.elapsed(begin, end) / 1e9)
        if during:
            driver.unregister(address)
        mapping.close()
    driver.cuda.cuMemFreeHost(ctypes.c_void_p(pinned))
    driver.cuda.cuMemFree_v2(ctypes.c_uint64(device))
    mapping, address, size = mapped(path)
    target = driver.alloc(size)
    start = time.perf_counter()
    driver.register(address, size)
    driver.copy_async(target, address, size, stream)
    driver.synchronize(stream)
    timed("whole then queued: register + copy", time.perf_counter() - start)
    driver.unregister(address)
    mapping.close()
    for parts in (4, 8, 16):
        mapping, address, size = mapped(path)
        pieces = ranges(size, parts)
        start = time.perf_counter()
        for offset, length in pieces:
            driver.register(address + offset, length)
            driver.copy_async(target + offset, address + offset, length, stream)
        driver.synchronize(stream)
        timed(f"progressive async x{parts}: register + copy", time.perf_counter() - start)
        for offset, _ in pieces:
            driver.unregister(address + offset)
        mapping.close()
    driver.cuda.cuMemFree_v2(ctypes.c_uint64(target))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file")
    parser.add_argument("--threads", default="2,4,8")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=("exit", "unregister"))
    parser.add_argument("--only", choices=("queued",), help="only the queued copies and the progressive async parts")
    args = parser.parse_args()
    if args.child:
        child(args.file, args.child == "unregister")
        return
    with open(args.file, "rb") as file:  # the file in the page cache
        while file.read(64 << 20):
            pass
    driver = Driver()
    libc = ctypes.CDLL(None, use_errno=True)
    rows: dict[str, list[float]] = {}
    refused: set[str] = set()

    def timed(name: str, seconds: float) -> None:
        rows.setdefault(name, []).append(seconds)

    for _ in range(args.rounds):
        if args.only == "queued":
            queued(driver, args.file, timed)
            continue
        mapping, address, size = mapped(args.file)
        start = time.perf_counter()
        driver.register(address, size)
        timed("register", time.perf_counter() - start)
        start = time.perf_counter()
        driver.unregister(address)
        timed("unregister", time.perf_counter() - start)
        mapping.close()
        for threads in (int(t) for t in args.threads.split(",")):
            mapping, address, size = mapped(args.file)

            def populate(offset: int, length: int) -> None:
                libc.madvise(ctypes.c_void_p(address + offset), ctypes.c_size_t(length), MADV_POPULATE_READ)

            filled = in_threads(populate, ranges(size, threads))
            start = time.perf_counter()
            driver.register(address, size)
            timed(f"populate x{threads} + register", filled + time.perf_counter() - start)
            timed(f"populate x{threads} alone", filled)
            driver.unregister(address)
            mapping.close()
            mapping, address, size = mapped(args.file)
            pieces = ranges(size, threads)

            def register(offset: int, length: int) -> None:
                driver.current()
                driver.register(address + offset, length)

            def unregister(offset: int, length: int) -> None:
                driver.current()
                driver.unregister(address + offset)

            timed(f"pieces x{threads} register", in_threads(register, pieces))
            if len(pieces) > 1:
                device = driver.alloc(64 << 20)
                middle = pieces[1][0] - (32 << 20)
                start = time.perf_counter()
                try:
                    for _ in range(8):
                        driver.copy_to_device(device, address + middle, 64 << 20)
                    timed(f"across pieces x{threads} GB/s", 8 * (64 << 20) / (time.perf_counter() - start) / 1e9)
                except RuntimeError as error:  # the driver refuses a copy from two registrations
                    refused.add(f"across pieces x{threads}: {error}")
                driver.cuda.cuMemFree_v2(ctypes.c_uint64(device))
            timed(f"pieces x{threads} unregister", in_threads(unregister, pieces))
            mapping.close()
        for mode in ("exit", "unregister"):
            process = subprocess.Popen([sys.executable, __file__, args.file, "--child", mode], stdout=subprocess.PIPE, text=True)
            registered = float(process.stdout.readline())
            process.wait()
            timed(f"child {mode}: registered to ended", time.time() - registered)
        progressive(driver, args.file, timed)
        beside(driver, args.file, timed)
        queued(driver, args.file, timed)
    size = os.path.getsize(args.file)
    print(f"{args.file}: {size / 1e9:.2f} GB, medians of {args.rounds}")
    for name, values in rows.items():
        unit = "" if name.endswith("GB/s") else " s"
        print(f"  {name}: {statistics.median(values):.4f}{unit} ({', '.join(f'{v:.4f}' for v in values)})")
    for line in sorted(refused):
        print(f"  {line}")


if __name__ == "__main__":
    main()
