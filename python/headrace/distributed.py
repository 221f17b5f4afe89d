"""Many GPUs, many nodes: headrace over MPI (mpi4py).

    mpirun -n 4 headrace stream run.hrc --device 0      # each rank its own GPU (by local rank) and frames
    ranks = headrace.distributed.ranks()                 # the same from Python
    for frame in ds.stream(frames=ranks.frames_of(len(ds.frames)), device=ranks.device(0)): ...

Each rank is one process with its own engine on its own GPU, the GPU of its rank on its node (local rank
``k`` takes GPU ``(d + k) % gpus`` when asked for GPU ``d``; ranks beyond the GPUs share them), and its own
share of the container: frames partitioned by time for a series (:meth:`Ranks.frames_of`, contiguous
blocks). Without MPI, or with one rank, everything behaves exactly as without this module: mpi4py is
imported only when the process was started by an MPI launcher (``mpirun``, ``mpiexec``, ``srun``).

The GPUs of a job are joined by NCCL (:func:`gpu_communicator`: one communicator a job and GPU, its unique
id drawn by rank 0 and broadcast over MPI), which sort-last compositing uses to exchange images between
GPUs; MPI stays for launching, host data and the CPU path. NCCL is loaded at run time (the
``nvidia-nccl-cu13`` wheel or the system's): without it, or with ranks sharing a GPU, the job composites
through host memory and says why. NVLink multicast stays off (``NCCL_NVLS_ENABLE=0``).

A rank that fails takes the job down: :func:`fail_together` (the command line uses it for every command)
says which rank failed and why, then aborts the job, so that no rank waits forever in a collective for
one that is gone.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from headrace import _ext
from headrace.errors import UnavailableError

__all__ = ["Ranks", "ranks", "launched_by_mpi", "fail_together", "gpu_communicator", "bind_near_gpu", "placement"]

ABORT_DRAIN_S = 0.2  # seconds between a failing rank's message and the abort

# What MPI launchers put in a rank's environment: MPICH's hydra and Cray (PMI), Open MPI, PMIx, Slurm.
LAUNCHER_VARIABLES = ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")


def launched_by_mpi() -> bool:
    return any(name in os.environ for name in LAUNCHER_VARIABLES)


@dataclass(frozen=True)
class Ranks:
    """The job as one process sees it: its rank among ``size``, its rank among the ranks of its node
    (``local_rank`` of ``local_size``) and the communicator (None for one rank without MPI)."""

    rank: int = 0
    size: int = 1
    local_rank: int = 0
    local_size: int = 1
    comm: Any = None

    @property
    def root(self) -> bool:
        return self.rank == 0

    def block_bounds(self, count: int) -> list[int]:
        """Where each rank's contiguous block of ``count`` items starts, and ``count`` last (``size + 1``
        numbers): rank ``r`` holds ``[bounds[r], bounds[r + 1])``, the blocks' sizes within one."""
        return [r * count // self.size for r in range(self.size + 1)]

    def frames_of(self, frames: int) -> list[int]:
        """This rank's frames of a series of ``frames``: its block of :meth:`block_bounds`."""
        bounds = self.block_bounds(frames)
        return list(range(bounds[self.rank], bounds[self.rank + 1]))

    def device(self, device: int | str | None) -> int | str | None:
        """The GPU this rank takes when asked for ``device``: ``(device + local_rank) % gpus``; "cpu" and
        None stay as they are. Under MPI the process is then bound to the CPUs next to that GPU
        (:func:`bind_near_gpu`), once."""
        if device is None or device == "cpu" or self.size == 1:
            return device
        gpus = _ext.gpu_count()
        if not gpus:
            return device
        ordinal = (int(device) + self.local_rank) % gpus
        if ordinal not in _bound:
            _bound[ordinal] = bind_near_gpu(ordinal)
        return ordinal

    def gather(self, value: Any) -> list[Any] | None:
        """Every rank's ``value`` on rank 0 (in rank order), None elsewhere."""
        return [value] if self.comm is None else self.comm.gather(value, root=0)

    def gather_rows(self, rows: np.ndarray) -> np.ndarray | None:
        """Every rank's ``rows`` (the same dtype and row shape on each) one after another on rank 0, None
        elsewhere: sent as bytes (MPI's Gatherv), not pickled as :meth:`gather` sends, which took seconds
        for a trace's hundreds of MB of points."""
        if self.comm is None:
            return rows
        rows = np.ascontiguousarray(rows)
        sizes = self.comm.allgather(rows.nbytes)
        if sum(sizes) >= 2**31:  # past MPI's int counts (Open MPI 4 has no large-count calls): pickled
            everyone = self.comm.gather(rows, root=0)
            return np.concatenate(everyone) if everyone is not None else None
        from mpi4py import MPI  # type: ignore[import-not-found]  # loaded already: self.comm is one of its

        mine = [rows.reshape(-1).view(np.uint8), MPI.BYTE]
        if not self.root:
            self.comm.Gatherv(mine, None, root=0)
            return None
        out = np.empty(sum(sizes), np.uint8)
        self.comm.Gatherv(mine, [out, (sizes, np.cumsum([0, *sizes[:-1]])), MPI.BYTE], root=0)
        return out.view(rows.dtype).reshape(-1, *rows.shape[1:])

    def alltoall_rows(self, parts: list[np.ndarray]) -> np.ndarray:
        """``parts[r]`` sent to rank ``r`` (rows of one dtype and row shape on every rank); what every rank sent
        this one, one after another in rank order. Sent as bytes (MPI's Alltoallv), as :meth:`gather_rows`."""
        if self.comm is None:
            return parts[0]
        parts = [np.ascontiguousarray(part) for part in parts]
        sent = [part.nbytes for part in parts]
        received = self.comm.alltoall(sent)
        from mpi4py import MPI  # type: ignore[import-not-found]  # loaded already: self.comm is one of its

        if self.comm.allreduce(max(sum(sent), sum(received)), op=MPI.MAX) >= 2**31:  # past MPI's int counts: pickled
            return np.concatenate(self.comm.alltoall(parts))
        row = parts[0][:0]
        out = np.empty(sum(received), np.uint8)
        outgoing = np.concatenate([part.reshape(-1).view(np.uint8) for part in parts])
        self.comm.Alltoallv([outgoing, (sent, np.cumsum([0, *sent[:-1]])), MPI.BYTE],
                            [out, (received, np.cumsum([0, *received[:-1]])), MPI.BYTE])
        return out.view(row.dtype).reshape(-1, *row.shape[1:])

    def allgather(self, value: Any) -> list[Any]:
        return [value] if self.comm is None else self.comm.allgather(value)

    def barrier(self) -> None:
        if self.comm is not None:
            self.comm.Barrier()

    def idle_barrier(self, poll_seconds: float = 0.001) -> None:
        """A barrier that sleeps while it waits, for ranks idle while another works alone: MPI's Barrier polls
        at full speed, a core a rank that the working rank's threads may want (a command's idle ranks wait in
        MPI_Finalize, which sleeps between polls)."""
        if self.comm is None:
            return
        request = self.comm.Ibarrier()
        while not request.Test():
            time.sleep(poll_seconds)

    def describe(self) -> str:
        return "one process" if self.comm is None else f"rank {self.rank} of {self.size} (local {self.local_rank} of {self.local_size})"


_ranks: Ranks | None = None
_bound: dict[int, str] = {}


def bind_near_gpu(ordinal: int) -> str:
    """Binds this process (the threads it starts from now on: the engine's readers, copies and decoders) to
    the CPUs of GPU ``ordinal``'s NUMA node (its PCI device's ``local_cpulist``), replacing whatever binding
    the launcher made: Open MPI binds a job of 2 ranks or fewer to one core a rank, which leaves the
    engine's threads one core. Where the machine says nothing (no such file, a VM of one node), every CPU
    the process may use. ``HEADRACE_BIND_NEAR_GPU=0`` keeps the launcher's binding (a site's own policy).
    Returns what it did, for the statistics."""
    if os.environ.get("HEADRACE_BIND_NEAR_GPU", "1") == "0":
        return "left as the launcher bound it (HEADRACE_BIND_NEAR_GPU=0)"
    try:
        address = _ext.gpu_pci_address(ordinal)
        near = _cpu_list(Path(f"/sys/bus/pci/devices/{address}/local_cpulist").read_text())
    except (OSError, RuntimeError, ValueError):
        address, near = "", set()
    allowed = _allowed_cpus()
    chosen = (near & allowed) or allowed
    try:
        os.sched_setaffinity(0, chosen)
    except OSError as error:
        return f"left as the launcher bound it ({error.strerror})"
    where = f"GPU {ordinal}'s NUMA node ({address})" if near and chosen != allowed else "every CPU (one NUMA node)"
    return f"{len(chosen)} CPUs, {where}"


def _cpu_list(text: str) -> set[int]:
    """CPUs of a Linux list such as ``0-15,32-47``."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if part:
            low, _, high = part.partition("-")
            cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def _allowed_cpus() -> set[int]:
    """The CPUs this process may run on: its cgroup's cpuset, else every CPU (not its current affinity, which
    the launcher may have narrowed)."""
    try:
        return _cpu_list(Path("/sys/fs/cgroup/cpuset.cpus.effective").read_text()) or set(range(os.cpu_count() or 1))
    except (OSError, ValueError):
        return set(range(os.cpu_count() or 1))


def placement(ordinal: int) -> str:
    """What :func:`bind_near_gpu` did for GPU ``ordinal`` in this process ("" when it did not run)."""
    return _bound.get(ordinal, "")


def ranks() -> Ranks:
    """This process's place in the job: MPI's world when an MPI launcher started it, else one rank."""
    global _ranks
    if _ranks is None:
        _ranks = _world() if launched_by_mpi() else Ranks()
    return _ranks


def _world() -> Ranks:
    try:
        from mpi4py import MPI  # type: ignore[import-not-found]  # optional: scripts/setup.sh installs it
    except ImportError as error:
        raise UnavailableError(f"an MPI launcher started this process but mpi4py cannot be imported ({error}); "
                               "pip install mpi4py (scripts/setup.sh builds it against Debian's MPICH)") from None
    world = MPI.COMM_WORLD
    if world.Get_size() == 1:
        return Ranks(comm=None)
    node = world.Split_type(MPI.COMM_TYPE_SHARED)
    return Ranks(world.Get_rank(), world.Get_size(), node.Get_rank(), node.Get_size(), world)


_communicators: dict[int, tuple[Any, str]] = {}


def gpu_communicator(job: Ranks, device: int) -> tuple[Any, str]:
    """The job's NCCL communicator on this rank's GPU ``device`` (``_ext.GpuCommunicator``), made the first
    time every rank asks (collective: every rank calls it, each with its own GPU), and what it is; or None
    and why not on any rank (one rank alone, NCCL missing on a rank, ranks sharing a GPU), so that either
    every rank has one or none waits for the others in a collective."""
    if device in _communicators:
        return _communicators[device]
    if job.comm is None or job.size == 1:
        return None, "one rank"
    reason = _ext.nccl_unavailable_reason() or _ext.gpu_unavailable_reason()
    seen = job.allgather((reason, os.uname().nodename, device))
    missing = [f"rank {rank}: {why}" for rank, (why, _, _) in enumerate(seen) if why]
    shared = len({(node, gpu) for _, node, gpu in seen}) < len(seen)
    if missing or shared:
        result: tuple[Any, str] = (None, missing[0] if missing else "ranks share a GPU (NCCL joins one rank a GPU)")
    else:
        unique_id = job.comm.bcast(_ext.nccl_unique_id() if job.root else None, root=0)
        communicator = _ext.GpuCommunicator(unique_id, job.size, job.rank, device)
        result = (communicator, communicator.describe())
    _communicators[device] = result
    return result


def abort(code: int, message: str = "") -> None:
    """Ends the whole job (every rank) with ``code``, after saying ``message`` on this rank's stderr."""
    job = ranks()
    if message:
        print(message, file=sys.stderr, flush=True)
    if job.comm is not None and job.size > 1:
        sys.stdout.flush()
        # mpiexec forwards a rank's output through its proxy, which an abort ends at once: a moment for the
        # proxy to pass the message on (under load the line was lost, and the job ended without a word).
        time.sleep(ABORT_DRAIN_S)
        job.comm.Abort(code)


@contextmanager
def fail_together(prefix: str = "headrace") -> Iterator[Ranks]:
    """Runs the body on every rank; an exception on one rank names the rank and aborts the job (one rank:
    the exception goes on as it would without MPI)."""
    job = ranks()
    try:
        yield job
    except BaseException as error:
        if job.comm is not None and job.size > 1 and not isinstance(error, SystemExit):
            text = " ".join(str(error).split("\n")) or type(error).__name__
            abort(1, f"{prefix} (rank {job.rank} of {job.size}): {text}; stopping every rank")
        raise
