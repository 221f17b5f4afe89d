"""What headrace writes appears whole or not at all: each file is written as ``NAME.partial`` and
renamed over ``NAME``; a failure (an exception, Ctrl-C) removes the partial file and leaves ``NAME`` as
it was. Results (the rows of a measurement, a study, a trace's statistics) are CSV files written so."""

from __future__ import annotations

import csv
import ctypes
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

__all__ = ["PieceWriter", "replacing", "read_rows", "write_rows"]


@contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[str]:
    """Yields ``path.partial`` to write; renames it over ``path`` when the block ends, removes it otherwise."""
    partial = f"{os.fspath(path)}.partial"
    try:
        yield partial
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)


def read_rows(path: str) -> list[dict[str, str]]:
    """The rows of a results CSV, or none when it does not exist yet (a study resumes from them)."""
    if not os.path.exists(path):
        return []
    with open(path, newline="") as source:
        return list(csv.DictReader(source))


def write_rows(path: str, rows: Sequence[dict[str, object]]) -> None:
    """Writes rows (the union of their columns, in first-seen order) through a temporary file + rename,
    so an interrupted run keeps every finished row."""
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    with replacing(path) as partial, open(partial, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


class PieceWriter:
    """Writes pieces of one file at their offsets, side by side: ``threads`` threads ``pwrite`` them in
    ``chunk_bytes`` parts (copies into the page cache run on several cores where one copy took most of a
    large output's writing) and ask the kernel to write each part back at once, so the disk is busy while
    the rest is still being copied (``close`` fsyncs what is left). Other work (a checksum) may share the
    threads through :meth:`submit`. Pieces written twice or overlapping are the caller's to avoid."""

    def __init__(self, fd: int, threads: int = 0, chunk_bytes: int = 8 << 20) -> None:
        self._fd = fd
        self._chunk_bytes = chunk_bytes
        self._pool = ThreadPoolExecutor(threads or min(8, os.cpu_count() or 1), thread_name_prefix="headrace-write")
        self._pending: list[Future] = []

    def __enter__(self) -> PieceWriter:
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        self.close(failed=kind is not None)

    def submit(self, work: Callable[..., Any], *args: Any) -> Future:
        """``work(*args)`` on the writer's threads (in the order submitted, among the writes)."""
        future = self._pool.submit(work, *args)
        self._pending.append(future)
        return future

    def write_at(self, offset: int, data: Any) -> None:
        """Writes ``data`` (bytes or any buffer, kept alive until :meth:`close`) at ``offset``."""
        view = memoryview(data).cast("B")
        for start in range(0, len(view), self._chunk_bytes):
            self.submit(self._put, offset + start, view[start:start + self._chunk_bytes])

    def _put(self, offset: int, view: memoryview) -> None:
        done = 0
        while done < len(view):
            done += os.pwrite(self._fd, view[done:], offset + done)
        _start_writeback(self._fd, offset, len(view))

    def close(self, failed: bool = False) -> None:
        """Waits for every piece (raising the first failure), then fsyncs; a failed writer only waits."""
        try:
            for future in self._pending:
                if failed:
                    future.cancel()
                else:
                    future.result()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pending.clear()
        if not failed:
            os.fsync(self._fd)


_SYNC_FILE_RANGE_WRITE = 2  # <fcntl.h>: start writing the range back, without waiting for it


def _load_sync_file_range() -> Callable[[int, int, int], None]:
    """Linux's sync_file_range(2) from the C library (Python's os has none); elsewhere, nothing (fsync writes all)."""
    try:
        call = ctypes.CDLL(None, use_errno=True).sync_file_range
    except (AttributeError, OSError):
        return lambda fd, offset, length: None
    call.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]

    def start(fd: int, offset: int, length: int) -> None:
        call(fd, offset, length, _SYNC_FILE_RANGE_WRITE)  # a hint: a refusal (a file system without it) changes nothing

    return start


_start_writeback = _load_sync_file_range()
