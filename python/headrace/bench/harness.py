"""The only clock of headrace's measurements: repeats, cache state and results.

Cold means the page cache no longer holds the file: its pages are written back and evicted with
``posix_fadvise(POSIX_FADV_DONTNEED)`` (no privileges needed, nothing else on the machine touched), and
``mincore`` then says how much is still cached (pages another process maps or locks stay). Dropping the
whole machine's cache (``/proc/sys/vm/drop_caches``, root only) is done only when asked for by name
(``drop-all``): on a shared node it costs every other job its cache. The method used, and what stayed
cached, is recorded with every measurement.
"""

from __future__ import annotations

import csv
import os
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from headrace._files import replacing

__all__ = ["CacheState", "CACHE_STATES", "Measurement", "drop_page_cache", "evict_from_page_cache", "drop_all_page_caches",
           "uncache", "warm_page_cache", "measure", "write_csv", "read_rows", "write_rows"]

CacheState = Literal["cold", "hot", "drop-all"]
CACHE_STATES: tuple[str, ...] = ("cold", "hot", "drop-all")


@dataclass
class Measurement:
    """Repeated timings of one case; throughput in GB/s (1e9 bytes per second)."""

    case: str
    bytes: int
    seconds: list[float]
    cache: CacheState
    cache_method: str
    # What each study records with a case (names, numbers, knob dicts); it reads back what it put there.
    parameters: dict[str, Any] = field(default_factory=dict)

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


def _write_back(paths: Sequence[str]) -> None:
    for path in paths:  # dirty pages cannot be evicted
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def evict_from_page_cache(paths: Iterable[str]) -> str:
    """Evicts these files' pages (and only theirs) from the page cache; returns how, with what stayed."""
    from headrace import _ext

    paths = list(paths)
    _write_back(paths)
    stayed = 0
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        stayed += _ext.page_cache_resident_bytes(path)
    if stayed:
        return f"fadvise, {stayed / 2**20:.1f} MiB still cached (mapped or locked pages)"
    return "fadvise"


def drop_all_page_caches(paths: Iterable[str] = ()) -> str:
    """Drops the whole machine's page cache (root only; the files in ``paths`` written back first)."""
    _write_back(list(paths))
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as control:
            control.write("3\n")
    except OSError as error:
        from headrace import _ext

        raise _ext.UsageError(f"dropping the whole page cache needs root (/proc/sys/vm/drop_caches: {error.strerror}); "
                              "cold evicts only the file and needs none") from None
    return "drop_caches (the whole machine)"


def drop_page_cache(paths: Iterable[str], everything: bool = False) -> str:
    """Cold: the files evicted, or with ``everything`` the whole cache dropped; returns how."""
    return drop_all_page_caches(paths) if everything else evict_from_page_cache(paths)


def uncache(paths: Iterable[str], state: str) -> str:
    """Before a repeat in a cache state of :data:`CACHE_STATES`: cold, the files evicted; drop-all, the
    whole cache dropped; hot, nothing (its cache was filled once). Returns how ("" for hot)."""
    return "" if state == "hot" else drop_page_cache(paths, everything=state == "drop-all")


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
    parameters: dict[str, Any] | None = None,
    setup: Callable[[], None] | None = None,
    prepare_cache: Callable[[], str] | None = None,
    go_on: Callable[[int], bool] | None = None,
) -> Measurement:
    """Runs ``body`` ``repeats`` times, preparing the cache state before each; body returns bytes moved.

    ``setup`` runs before the cache state is prepared, untimed: it opens what must be opened anew for a
    cold repeat (a whole-file mapping keeps its pages resident through a page-cache drop).
    ``prepare_cache`` replaces the preparation of ``cache`` before every repeat (a state between cold and
    hot, e.g. part of the file cached); it returns how, which is recorded. ``go_on(repeats_done)``,
    asked before each repeat after the first, ends the measurement early when false (a time budget).
    """
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    seconds: list[float] = []
    moved = 0
    method = ""
    for repeat in range(repeats):
        if repeat and go_on is not None and not go_on(repeat):
            break
        if setup is not None:
            setup()
        if prepare_cache is not None:
            method = prepare_cache()
        elif cache != "hot":
            method = uncache(files, cache)
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
    with replacing(path) as partial, open(partial, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
