"""Where sort-last compositing runs: on the GPUs that drew the images, over NCCL, or through host memory
over MPI; what both many-rank renderers (:mod:`headrace.workloads.particles.sort_last`,
:mod:`headrace.workloads.volume.sort_last`) ask before their first frame.

``compositing="auto"`` (the default) takes the GPUs when every rank draws on a GPU of its own and NCCL
loads on every rank, the host otherwise, and says why; ``"gpu"`` refuses to run without them; ``"host"``
is today's MPI path (all a CPU job has). The choice is collective: every rank makes it together.
"""

from __future__ import annotations

from typing import Any

from headrace.distributed import Ranks, gpu_communicator
from headrace.errors import UnavailableError, UsageError

__all__ = ["COMPOSITING", "choose_compositing"]

COMPOSITING = ("auto", "gpu", "host")


def choose_compositing(job: Ranks, ordinal: int | None, compositing: str) -> tuple[Any, str]:
    """(the job's NCCL communicator, or None for the host's path; what compositing runs on, and why)."""
    if compositing not in COMPOSITING:
        raise UsageError(f"compositing {compositing!r}: expected one of {', '.join(COMPOSITING)}")
    if job.size == 1:
        return None, "one rank: nothing to composite"
    if compositing == "host" or ordinal is None:
        if compositing == "gpu":
            raise UsageError("compositing on the GPU needs the ranks to draw on GPUs (a device number, not cpu)")
        why = "asked for" if compositing == "host" else "the ranks draw on the CPU"
        return None, f"host memory over MPI ({why})"
    communicator, described = gpu_communicator(job, ordinal)
    if communicator is None:
        if compositing == "gpu":
            raise UnavailableError(f"compositing on the GPU needs NCCL on every rank, one GPU a rank: {described}")
        return None, f"host memory over MPI (no GPU compositing: {described})"
    return communicator, f"GPU over {described}"
