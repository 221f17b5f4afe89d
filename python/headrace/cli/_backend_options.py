"""Command-line knobs of the host I/O backends, shared by the commands that read."""

from __future__ import annotations

import argparse

__all__ = ["add_backend_arguments", "backend_options"]


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("backend knobs (default: HEADRACE_* settings, see docs/settings.md)")
    group.add_argument("--threads", type=int, help="worker threads (posix, direct, mmap, ram)")
    group.add_argument("--queue-depth", type=int, help="reads in flight (uring)")
    group.add_argument("--task-size", type=int, dest="task_size_bytes", help="bytes per read task / uring block")
    group.add_argument("--submit-batch", type=int, help="SQEs per io_uring_submit (uring)")
    group.add_argument("--o-direct", action=argparse.BooleanOptionalAction, default=None, help="O_DIRECT (uring)")
    group.add_argument("--register-buffers", action=argparse.BooleanOptionalAction, default=None,
                       help="registered bounce buffers (uring)")
    group.add_argument("--register-files", action=argparse.BooleanOptionalAction, default=None,
                       help="registered file (uring)")
    group.add_argument("--mmap-mode", choices=("whole", "segment", "window"), help="mapping policy (mmap)")
    group.add_argument("--mmap-window-segments", type=int, help="mappings in flight (mmap window mode)")
    group.add_argument("--mmap-dontneed-bytes", type=int, help="madvise(MADV_DONTNEED) period in bytes (mmap)")


def backend_options(args: argparse.Namespace) -> dict[str, object]:
    """The knobs given on the command line, as open_backend keyword arguments."""
    names = ("threads", "queue_depth", "task_size_bytes", "submit_batch", "o_direct", "register_buffers",
             "register_files", "mmap_mode", "mmap_window_segments", "mmap_dontneed_bytes")
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
