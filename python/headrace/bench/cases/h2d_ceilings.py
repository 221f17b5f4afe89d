"""The hot yardsticks of the particle study, measured with CuPy alone (not headrace's queue), as JSON:

    python3 -m headrace.bench.cases.h2d_ceilings FILE [--piece-bytes 4M,16M,64M] [--repeats 5] [--csv out.csv] > h2d.json

- ``pinned_alloc``: H2D from cudaHostAlloc'd memory (1 GiB), the pinned ceiling;
- ``pinned_file``: H2D from FILE mapped read-only and page-locked with cudaHostRegister (ram-pinned's
  path: DMA from page-cache pages), whole and in pieces of each size, one stream, back to back;
- ``chunks``: the file's chunks (FILE is a headrace container of equal chunks, each padded to whole
  pages) into one back-to-back buffer, one copy per chunk against one 2D copy whose rows are the chunks.

Best and median GB/s over the repeats, each repeat the copies issued and the stream synchronized, timed by
the harness after one uncounted pass that warms the path up.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import headrace
from headrace.bench.harness import Measurement, measure, write_csv
from headrace.sizes import parse_size

__all__ = ["main"]

PINNED_BYTES = 1 << 30


class _Copies:
    """Times host-to-device copies issued on one stream; keeps every measurement for the CSV."""

    def __init__(self, cupy: Any, repeats: int) -> None:
        self.cupy, self.repeats = cupy, repeats
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.measurements: list[Measurement] = []

    def time(self, case: str, issue: Callable[[], None], size: int, files: Sequence[str] = (),
             **parameters: Any) -> dict[str, float]:
        """Best and median GB/s of ``issue``'s copies of ``size`` bytes (``files``: where they come from, hot)."""
        def body() -> int:
            issue()
            self.stream.synchronize()
            return size

        body()  # warms the path up, uncounted
        measured = measure(case, body, files=files, cache="hot", repeats=self.repeats, parameters=parameters)
        self.measurements.append(measured)
        return {"best_gbps": measured.best_gbps, "median_gbps": measured.median_gbps}

    def pieces(self, destination: Any, source: int, size: int, piece: int) -> Callable[[], None]:
        def issue() -> None:
            for at in range(0, size, piece):
                self.cupy.cuda.runtime.memcpyAsync(destination.data.ptr + at, source + at, min(piece, size - at), 1,
                                                   self.stream.ptr)

        return issue


def _chunk_copies(copies: _Copies, path: str, destination: Any, address: int) -> dict[str, object]:
    """The file's leading run of equal chunks copied one by one, and as the rows of one 2D copy."""
    runtime, stream = copies.cupy.cuda.runtime, copies.stream
    table = headrace.open(path).container.chunk_table()
    offsets, sizes = [int(o) for o in table["offset"]], [int(s) for s in table["raw_size"]]
    count = next((k for k, s in enumerate(sizes) if s != sizes[0]), len(sizes))  # the leading run of equal chunks
    pitch, size = offsets[1] - offsets[0], sizes[0]
    count = next((k for k in range(1, count) if offsets[k] - offsets[k - 1] != pitch), count)
    total = size * count

    def one_by_one() -> None:
        for k in range(count):
            runtime.memcpyAsync(destination.data.ptr + k * size, address + offsets[k], size, 1, stream.ptr)

    def rows() -> None:
        runtime.memcpy2DAsync(destination.data.ptr, size, address + offsets[0], pitch, size, count, 1, stream.ptr)

    return {"chunk_bytes": size, "file_pitch": pitch, "chunks": count,
            "one_copy_each": copies.time("chunks, one copy each", one_by_one, total, [path], chunk_bytes=size),
            "one_2d_copy": copies.time("chunks, one 2D copy", rows, total, [path], chunk_bytes=size)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--piece-bytes", default="4M,16M,64M")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--csv", help="every measurement, one row each")
    args = parser.parse_args(argv)
    import cupy  # type: ignore[import]  # GPU machines only

    pieces = [parse_size(p) for p in args.piece_bytes.split(",")]
    result: dict[str, Any] = {"file": args.file, "device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()}

    pinned = cupy.cuda.alloc_pinned_memory(PINNED_BYTES)
    np.frombuffer(pinned, dtype=np.uint8, count=PINNED_BYTES)[:] = 1
    destination = cupy.empty(PINNED_BYTES, dtype=cupy.uint8)
    copies = _Copies(cupy, args.repeats)
    result["pinned_alloc"] = {"bytes": PINNED_BYTES, **copies.time(
        "pinned_alloc", copies.pieces(destination, pinned.ptr, PINNED_BYTES, PINNED_BYTES), PINNED_BYTES)}
    del pinned, destination

    with open(args.file, "rb") as source:
        size = os.fstat(source.fileno()).st_size
        mapping = mmap.mmap(source.fileno(), size, prot=mmap.PROT_READ)
    address = np.frombuffer(mapping, dtype=np.uint8).ctypes.data
    cupy.cuda.runtime.hostRegister(address, size, 8)  # cudaHostRegisterReadOnly: the mapping is read-only
    try:
        destination = cupy.empty(size, dtype=cupy.uint8)
        pinned_file: dict[str, Any] = {"bytes": size}
        result["pinned_file"] = pinned_file
        for piece in [size, *pieces]:
            name = "whole" if piece == size else f"pieces_{piece >> 20}MiB"
            pinned_file[name] = copies.time(f"pinned_file {name}", copies.pieces(destination, address, size, piece),
                                            size, [args.file], piece_bytes=piece)
        result["chunks"] = _chunk_copies(copies, args.file, destination, address)
    finally:
        cupy.cuda.runtime.hostUnregister(address)
    if args.csv:
        write_csv(args.csv, copies.measurements)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
