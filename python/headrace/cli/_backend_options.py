"""Command-line knobs of the host I/O backends, shared by the commands that read."""

from __future__ import annotations

import argparse

from headrace.settings import KNOBS

__all__ = ["add_backend_arguments", "backend_options"]


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("backend knobs (default: HEADRACE_* settings, see docs/settings.md)")
    group.add_argument("--threads", type=int, help="worker threads (posix, direct, mmap, ram)")
    group.add_argument("--queue-depth", type=int, help="reads in flight (uring)")
    group.add_argument("--task-size", type=int, dest="task_size_bytes", help="bytes per read task / uring block")
    group.add_argument("--submit-batch", type=int, help="SQEs per io_uring_submit (uring)")
    group.add_argument("--o-direct", action=argparse.BooleanOptionalAction, default=None, dest="uring_o_direct",
                       help="O_DIRECT (uring)")
    group.add_argument("--register-buffers", action=argparse.BooleanOptionalAction, default=None,
                       dest="uring_register_buffers", help="registered bounce buffers (uring)")
    group.add_argument("--register-files", action=argparse.BooleanOptionalAction, default=None,
                       dest="uring_register_files", help="registered file (uring)")
    group.add_argument("--mmap-mode", choices=("whole", "segment", "window"), help="mapping policy (mmap)")
    group.add_argument("--mmap-window-segments", type=int, help="mappings in flight (mmap window mode)")
    group.add_argument("--mmap-dontneed-bytes", type=int, help="madvise(MADV_DONTNEED) period in bytes (mmap)")


def backend_options(args: argparse.Namespace) -> dict[str, object]:
    """The I/O knobs given on the command line, by their names in headrace.settings.KNOBS."""
    return {name: getattr(args, name) for name in KNOBS if getattr(args, name, None) is not None}
