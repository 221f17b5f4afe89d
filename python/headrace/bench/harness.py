"""The only clock of headrace's measurements: repeats, cache state and results.

Cold means the page cache no longer holds the file: as root the whole cache is dropped
(``/proc/sys/vm/drop_caches``); otherwise the file's pages are evicted with
``posix_fadvise(POSIX_FADV_DONTNEED)``, which works for clean pages without privileges. The
method used is recorded with every measurement.
"""

from __future__ import annotations

import csv
import os
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

__all__ = ["CacheState", "Measurement", "drop_page_cache", "warm_page_cache", "measure", "write_csv", "read_rows",
           "write_rows"]

CacheState = Literal["cold", "hot"]


@dataclass
class Measurement:
    """Repeated timings of one case; throughput in GB/s (1e9 bytes per second)."""

    case: str
    bytes: int
    seconds: list[float]
    cache: CacheState
    cache_method: str
    parameters: dict[str, object] = field(default_factory=dict)

    @property
    def best_gbps(self) -> float:
        return self.bytes / min(self.seconds) / 1e9

    @property
    def median_gbps(self) -> float:
        return self.bytes / statistics.median(self.seconds) / 1e9

    @property
    def spread(self) -> float:
        """(max - min) / median of the repeat times: the noise bound of this measurement."""
        return (max(self.seconds) - min(self.seconds)) / statistics.median(self.seconds)

    def as_row(self) -> dict[str, object]:
        row = {k: v for k, v in asdict(self).items() if k not in ("seconds", "parameters")}
        row.update(self.parameters)
        row.update(
            repeats=len(self.seconds),
            seconds_min=min(self.seconds),
            seconds_median=statistics.median(self.seconds),
            best_gbps=round(self.best_gbps, 4),
            median_gbps=round(self.median_gbps, 4),
            spread=round(self.spread, 4),
        )
        return row


def drop_page_cache(paths: Iterable[str]) -> str:
    """Evicts the files from the page cache; returns how ("drop_caches" or "fadvise")."""
    paths = list(paths)
    for path in paths:  # dirty pages cannot be dropped
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as control:
            control.write("3\n")
        return "drop_caches"
    except OSError:
        for path in paths:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        return "fadvise"


def warm_page_cache(paths: Iterable[str], chunk_bytes: int = 16 << 20) -> str:
    """Reads the files once so that they sit in the page cache."""
    for path in paths:
        with open(path, "rb", buffering=0) as f:
            while f.read(chunk_bytes):
                pass
    return "preread"


def measure(
    case: str,
    body: Callable[[], int],
    *,
    files: Sequence[str],
    cache: CacheState,
    repeats: int = 3,
    parameters: dict[str, object] | None = None,
    setup: Callable[[], None] | None = None,
    prepare_cache: Callable[[], str] | None = None,
) -> Measurement:
    """Runs ``body`` ``repeats`` times, preparing the cache state before each; body returns bytes moved.

    ``setup`` runs before the cache state is prepared, untimed: it opens what must be opened anew for a
    cold repeat (a whole-file mapping keeps its pages resident through a page-cache drop).
    ``prepare_cache`` replaces the preparation of ``cache`` before every repeat (a state between cold and
    hot, e.g. part of the file cached); it returns how, which is recorded.
    """
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    seconds: list[float] = []
    moved = 0
    method = ""
    for repeat in range(repeats):
        if setup is not None:
            setup()
        if prepare_cache is not None:
            method = prepare_cache()
        elif cache == "cold":
            method = drop_page_cache(files)
        elif repeat == 0:  # hot: one read fills the cache for every repeat
            method = warm_page_cache(files)
        start = time.perf_counter()
        moved = body()
        seconds.append(time.perf_counter() - start)
    return Measurement(case, moved, seconds, cache, method, dict(parameters or {}))


def write_csv(path: str, measurements: Sequence[Measurement]) -> None:
    """Writes one row per measurement (temporary file + rename)."""
    write_rows(path, [m.as_row() for m in measurements])


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
    partial = f"{path}.partial"
    with open(partial, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    os.replace(partial, path)
