"""Many GPUs, many nodes: headrace over MPI (mpi4py).

    mpirun -n 4 headrace stream run.hrc --device 0      # each rank its own GPU (by local rank) and frames
    ranks = headrace.distributed.ranks()                 # the same from Python
    for frame in ds.stream(frames=ranks.frames_of(len(ds.frames)), device=ranks.device(0)): ...

Each rank is one process with its own engine on its own GPU, the GPU of its rank on its node (local rank
``k`` takes GPU ``(d + k) % gpus`` when asked for GPU ``d``; ranks beyond the GPUs share them), and its own
share of the container: frames partitioned by time for a series (:meth:`Ranks.frames_of`, contiguous
blocks). Without MPI, or with one rank, everything behaves exactly as without this module: mpi4py is
imported only when the process was started by an MPI launcher (``mpirun``, ``mpiexec``, ``srun``).

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
from typing import Any

from headrace import _ext
from headrace.errors import UnavailableError

__all__ = ["Ranks", "ranks", "launched_by_mpi", "fail_together"]

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

    def frames_of(self, frames: int) -> list[int]:
        """This rank's frames of a series of ``frames``: a contiguous block, the blocks' sizes within one."""
        return list(range(self.rank * frames // self.size, (self.rank + 1) * frames // self.size))

    def device(self, device: int | str | None) -> int | str | None:
        """The GPU this rank takes when asked for ``device``: ``(device + local_rank) % gpus``; "cpu" and
        None stay as they are."""
        if device is None or device == "cpu" or self.size == 1:
            return device
        gpus = _ext.gpu_count()
        return (int(device) + self.local_rank) % gpus if gpus else device

    def gather(self, value: Any) -> list[Any] | None:
        """Every rank's ``value`` on rank 0 (in rank order), None elsewhere."""
        return [value] if self.comm is None else self.comm.gather(value, root=0)

    def allgather(self, value: Any) -> list[Any]:
        return [value] if self.comm is None else self.comm.allgather(value)

    def barrier(self) -> None:
        if self.comm is not None:
            self.comm.Barrier()

    def describe(self) -> str:
        return "one process" if self.comm is None else f"rank {self.rank} of {self.size} (local {self.local_rank} of {self.local_size})"


_ranks: Ranks | None = None


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
