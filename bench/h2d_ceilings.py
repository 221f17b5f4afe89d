"""The hot yardsticks of the particle study, measured with CuPy alone (not headrace's queue), as JSON:

    python3 bench/h2d_ceilings.py FILE [--piece-bytes 4M,16M,64M] [--repeats 5] > h2d.json

- ``pinned_alloc``: H2D from cudaHostAlloc'd memory (1 GiB), the pinned ceiling;
- ``pinned_file``: H2D from FILE mapped read-only and page-locked with cudaHostRegister (ram-pinned's
  path: DMA from page-cache pages), whole and in pieces of each size, one stream, back to back;
- ``chunks``: the file's chunks (FILE is a headrace container of equal chunks, each padded to whole
  pages) into one back-to-back buffer, one copy per chunk against one 2D copy whose rows are the chunks.

Best and median GB/s over the repeats, each timed by CUDA events around the copies.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import statistics


def _gbps(seconds: list[float], size: int) -> dict[str, float]:
    return {"best_gbps": size / min(seconds) / 1e9, "median_gbps": size / statistics.median(seconds) / 1e9}


def _timed(cupy, stream, issue, repeats: int) -> list[float]:
    """Seconds of ``issue()``'s copies on ``stream`` by CUDA events, ``repeats`` times after one uncounted
    pass that warms the path up."""
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    seconds = []
    for _ in range(repeats + 1):
        start.record(stream)
        issue()
        end.record(stream)
        end.synchronize()
        seconds.append(cupy.cuda.get_elapsed_time(start, end) / 1e3)
    return seconds[1:]


def _copies(cupy, destination, source: int, size: int, piece: int, stream, repeats: int) -> list[float]:
    def pieces() -> None:
        for at in range(0, size, piece):
            cupy.cuda.runtime.memcpyAsync(destination.data.ptr + at, source + at, min(piece, size - at), 1, stream.ptr)

    return _timed(cupy, stream, pieces, repeats)


def _chunk_copies(cupy, path: str, destination, address: int, stream, repeats: int) -> dict[str, object]:
    import headrace

    table = headrace.open(path).container.chunk_table()
    offsets, sizes = [int(o) for o in table["offset"]], [int(s) for s in table["raw_size"]]
    count = next((k for k, s in enumerate(sizes) if s != sizes[0]), len(sizes))  # the leading run of equal chunks
    pitch, size = offsets[1] - offsets[0], sizes[0]
    count = next((k for k in range(1, count) if offsets[k] - offsets[k - 1] != pitch), count)
    total = size * count

    def one_by_one() -> None:
        for k in range(count):
            cupy.cuda.runtime.memcpyAsync(destination.data.ptr + k * size, address + offsets[k], size, 1, stream.ptr)

    def rows() -> None:
        cupy.cuda.runtime.memcpy2DAsync(destination.data.ptr, size, address + offsets[0], pitch, size, count, 1, stream.ptr)

    return {"chunk_bytes": size, "file_pitch": pitch, "chunks": count,
            "one_copy_each": _gbps(_timed(cupy, stream, one_by_one, repeats), total),
            "one_2d_copy": _gbps(_timed(cupy, stream, rows, repeats), total)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--piece-bytes", default="4M,16M,64M")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import cupy
    import numpy as np

    from headrace.sizes import parse_size

    pieces = [parse_size(p) for p in args.piece_bytes.split(",")]
    stream = cupy.cuda.Stream(non_blocking=True)
    result: dict[str, object] = {"file": args.file, "device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()}

    size = 1 << 30
    pinned = cupy.cuda.alloc_pinned_memory(size)
    np.frombuffer(pinned, dtype=np.uint8, count=size)[:] = 1
    destination = cupy.empty(size, dtype=cupy.uint8)
    result["pinned_alloc"] = {"bytes": size, **_gbps(_copies(cupy, destination, pinned.ptr, size, size, stream,
                                                             args.repeats), size)}
    del pinned, destination

    with open(args.file, "rb") as source:
        size = os.fstat(source.fileno()).st_size
        mapping = mmap.mmap(source.fileno(), size, prot=mmap.PROT_READ)
    address = np.frombuffer(mapping, dtype=np.uint8).ctypes.data
    cupy.cuda.runtime.hostRegister(address, size, 8)  # cudaHostRegisterReadOnly: the mapping is read-only
    try:
        destination = cupy.empty(size, dtype=cupy.uint8)
        result["pinned_file"] = {"bytes": size}
        for piece in [size, *pieces]:
            name = "whole" if piece == size else f"pieces_{piece >> 20}MiB"
            result["pinned_file"][name] = _gbps(_copies(cupy, destination, address, size, piece, stream, args.repeats), size)
        result["chunks"] = _chunk_copies(cupy, args.file, destination, address, stream, args.repeats)
    finally:
        cupy.cuda.runtime.hostUnregister(address)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
