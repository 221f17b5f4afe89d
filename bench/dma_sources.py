"""What N GPUs copying at once reach from each kind of host memory (issue 37: the hot stream at 4 GPUs).

    mpiexec -n N python3 bench/dma_sources.py FILE [GB_PER_RANK]      # one process a GPU, rank r on GPU r

Each rank copies its quarter (its 1/N) of FILE's bytes to its GPU in 64 MiB copies, over and over until
GB_PER_RANK have gone, from four sources in turn, every rank at once (a barrier before and after):
``pinned`` (cudaHostAlloc), ``anonymous`` (malloc'd pages page-locked by cudaHostRegister), ``file`` (the
file's page-cache pages mapped and page-locked whole in every process, as the engine does) and
``file-share`` (only the rank's share of them page-locked). Prints the aggregate GB/s of each (bytes over
the slowest rank's time). The file should be in the page cache (read it once before). Needs CuPy and mpi4py.
"""

from __future__ import annotations

import mmap
import os
import sys
import time

import cupy as cp  # type: ignore[import-not-found]
import numpy as np
from mpi4py import MPI  # type: ignore[import-not-found]

PIECE = 64 << 20
REGISTER_PORTABLE, REGISTER_READ_ONLY = 1, 8


def copy_rate(comm: MPI.Comm, address: int, size: int, total: int, target: cp.ndarray, stream: cp.cuda.Stream) -> float:
    """Aggregate GB/s of every rank copying ``total`` bytes from ``size`` bytes at ``address``, in pieces."""
    runtime = cp.cuda.runtime
    for offset in range(0, min(size, 4 * PIECE), PIECE):  # warm: the first copies map the pages for the GPU
        runtime.memcpyAsync(target.data.ptr, address + offset, min(PIECE, size - offset), runtime.memcpyHostToDevice, stream.ptr)
    stream.synchronize()
    comm.Barrier()
    started = time.perf_counter()
    done, offset = 0, 0
    while done < total:
        length = min(PIECE, size - offset)
        runtime.memcpyAsync(target.data.ptr, address + offset, length, runtime.memcpyHostToDevice, stream.ptr)
        done += length
        offset = 0 if offset + length >= size else offset + length
    stream.synchronize()
    seconds = comm.allreduce(time.perf_counter() - started, op=MPI.MAX)
    return comm.allreduce(done, op=MPI.SUM) / seconds / 1e9


def main() -> None:
    comm = MPI.COMM_WORLD
    rank, ranks = comm.rank, comm.size
    path = sys.argv[1]
    total = int(float(sys.argv[2] if len(sys.argv) > 2 else 8) * 1e9)
    cp.cuda.Device(rank).use()
    runtime = cp.cuda.runtime
    file_size = os.path.getsize(path)
    share = (file_size // ranks) // 4096 * 4096
    first = rank * share
    target = cp.empty(PIECE, dtype=cp.uint8)
    stream = cp.cuda.Stream(non_blocking=True)
    rates: dict[str, float] = {}

    pinned = cp.cuda.alloc_pinned_memory(share)
    np.frombuffer(pinned, dtype=np.uint8, count=share)[:] = 1
    rates["pinned"] = copy_rate(comm, pinned.ptr, share, total, target, stream)
    del pinned

    anonymous = np.ones(share, dtype=np.uint8)
    runtime.hostRegister(anonymous.ctypes.data, share, REGISTER_PORTABLE)
    rates["anonymous"] = copy_rate(comm, anonymous.ctypes.data, share, total, target, stream)
    runtime.hostUnregister(anonymous.ctypes.data)
    del anonymous

    with open(path, "rb") as f:
        mapping = mmap.mmap(f.fileno(), file_size, prot=mmap.PROT_READ)
    address = np.frombuffer(mapping, dtype=np.uint8).ctypes.data
    runtime.hostRegister(address, file_size, REGISTER_READ_ONLY | REGISTER_PORTABLE)
    rates["file"] = copy_rate(comm, address + first, share, total, target, stream)
    runtime.hostUnregister(address)
    runtime.hostRegister(address + first, share, REGISTER_READ_ONLY | REGISTER_PORTABLE)
    rates["file-share"] = copy_rate(comm, address + first, share, total, target, stream)
    runtime.hostUnregister(address + first)

    if rank == 0:
        print(f"dma sources, {ranks} GPU(s) at once, {share / 1e9:.2f} GB a rank, {total / 1e9:.1f} GB a rank: " +
              ", ".join(f"{name} {gbps:.1f} GB/s" for name, gbps in rates.items()), flush=True)


if __name__ == "__main__":
    main()
