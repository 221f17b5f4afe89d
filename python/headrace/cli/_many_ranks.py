"""Command-line flags of a job of several ranks (``mpirun -n N headrace render|play``): how the job shares
its frames (``--distribute``, :mod:`headrace.workloads.distribution`) and where sort-last compositing runs
(``--compositing``, :mod:`headrace.workloads.compositing`). One process ignores them."""

from __future__ import annotations

import argparse

from headrace.workloads.compositing import COMPOSITING
from headrace.workloads.distribution import DISTRIBUTIONS

__all__ = ["add_many_rank_arguments"]


def add_many_rank_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("under MPI (mpirun -n N headrace ...; docs/distributed.md)")
    group.add_argument("--distribute", choices=DISTRIBUTIONS, default="auto",
                       help="time: each rank its block of whole frames; sort-last: each frame shared by space and "
                            "composited; one: rank 0 alone; auto (default): time for a series of at least as many frames "
                            "as ranks, sort-last for frames that do not fit a GPU or whose time on one repays sharing's "
                            "setup, else time or one (said, with why)")
    group.add_argument("--compositing", choices=COMPOSITING, default="auto",
                       help="sort-last compositing on the GPUs over NCCL (gpu), through host memory over MPI (host), or "
                            "auto (default): the GPUs when every rank has its own and NCCL loads")
