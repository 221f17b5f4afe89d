"""A CuPy kernel on every frame of ``ds.stream(device=0)``, the zero-copy loop of docs/arrays.md: the stream
alone, the kernel alone on a resident frame, and both, in one process; the kernel's passes chosen so that it
takes about as long as the stream's frame. Prints CSV: what,seconds,frames (both / max(alone) is the overlap
ratio: 1.0 hides one behind the other completely). Hot, the series is played ``--loop`` times (4): a pipeline
of n frames cannot beat (n + 1) / n (the first frame's copy before any kernel, the last kernel after every
copy), 1.06 for one pass of 16. Issue 38's yardstick, run by users_at_speed_on_device.sh."""

from __future__ import annotations

import argparse
import time

import cupy as cp

import headrace

BUSY = cp.ElementwiseKernel("float32 x, int32 passes", "float32 y",
                            "float v = x; for (int i = 0; i < passes; ++i) v = v * 1.0000001f + 1e-7f; y = v",
                            "headrace_busy")


def stream_seconds(ds: headrace.Dataset, field: str, work=None, loop: int = 1, handed: list[float] | None = None) -> float:
    """Seconds to stream every frame (``work`` on each); ``handed`` gets when each frame was handed out."""
    compute = cp.cuda.Stream(non_blocking=True)
    start = time.perf_counter()
    with ds.stream(fields=[field], device=0, loop=loop) as frames:
        for frame in frames:
            if handed is not None:
                handed.append(time.perf_counter() - start)
            # A frame is handed out once its copies are issued: the stream alone also waits for them on
            # the GPU, or its time would be the host's issuing alone.
            frame.wait_on_stream(compute.ptr)
            if work is not None:
                with compute:
                    work(cp.from_dlpack(frame[field]))
            frame.release(stream=compute.ptr)
    compute.synchronize()
    return time.perf_counter() - start


def calibrated_passes(resident, out, seconds: float) -> int:
    """Passes for a kernel of about ``seconds`` over ``resident``."""
    BUSY(resident, 1, out)  # compiled and loaded first: the first launch's seconds are not the kernel's
    passes = 16
    while passes < 1 << 20:
        cp.cuda.Device().synchronize()
        start = time.perf_counter()
        BUSY(resident, passes, out)
        cp.cuda.Device().synchronize()
        if time.perf_counter() - start >= seconds:
            break
        passes *= 2
    return passes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file")
    parser.add_argument("--cold", choices=["stream", "both"],
                        help="one measurement in this fresh process, no warm-up (the caller dropped the page cache)")
    parser.add_argument("--passes", type=int, help="the kernel's passes (with --cold: the hot run's)")
    parser.add_argument("--loop", type=int, default=4, help="hot: the series played this many times (default 4)")
    args = parser.parse_args()
    ds = headrace.open(args.file)
    field = ds.fields[0].name
    frames = len(ds.frames)
    print("what,seconds,frames,passes")
    if args.cold:
        out = cp.empty(ds.shape(0, field), dtype=cp.float32).ravel()
        work = None if args.cold == "stream" else (lambda a: BUSY(a.ravel(), args.passes, out[:a.size]))
        BUSY(out[:1], 1, out[1:2])  # the kernel loaded (from CuPy's cache) before the clock, as the hot run's is
        cp.cuda.Device().synchronize()
        handed: list[float] = []
        seconds = stream_seconds(ds, field, work, handed=handed)
        print("# frames handed out at (s): " + " ".join(f"{t:.3f}" for t in handed))
        print(f"{args.cold}-cold,{seconds:.4f},{frames},{args.passes}")
        return
    stream_seconds(ds, field)  # the engine, the file's pages and the kernel warmed
    frames *= args.loop
    streamed = stream_seconds(ds, field, loop=args.loop)
    with ds.stream(fields=[field], device=0) as first:
        resident = cp.from_dlpack(next(first)[field]).copy().ravel()
    out = cp.empty_like(resident)
    passes = args.passes or calibrated_passes(resident, out, streamed / frames)
    start = time.perf_counter()
    for _ in range(frames):
        BUSY(resident, passes, out)
    cp.cuda.Device().synchronize()
    kernel = time.perf_counter() - start
    both = stream_seconds(ds, field, lambda a: BUSY(a.ravel(), passes, out[:a.size]), loop=args.loop)
    print(f"stream,{streamed:.4f},{frames},{passes}")
    print(f"kernel,{kernel:.4f},{frames},{passes}")
    print(f"both,{both:.4f},{frames},{passes}")


if __name__ == "__main__":
    main()
