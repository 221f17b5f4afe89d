"""What the page cache holds before a read: cold means it no longer holds the file, whose pages are
written back and evicted with ``posix_fadvise(POSIX_FADV_DONTNEED)`` (no privileges needed, nothing else
on the machine touched), ``mincore`` then saying how much is still cached (pages another process maps
or locks stay). Dropping the whole machine's cache (``/proc/sys/vm/drop_caches``, root only) is done
only when asked for by name (``drop-all``): on a shared node it costs every other job its cache. Each
function returns how it did it, which a measurement records.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Literal

from headrace import _ext

__all__ = ["CacheState", "CACHE_STATES", "drop_page_cache", "evict_from_page_cache", "drop_all_page_caches", "uncache",
           "warm_page_cache"]

CacheState = Literal["cold", "hot", "drop-all"]
CACHE_STATES: tuple[str, ...] = ("cold", "hot", "drop-all")


def _write_back(paths: Sequence[str]) -> None:
    for path in paths:  # dirty pages cannot be evicted
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def evict_from_page_cache(paths: Iterable[str]) -> str:
    """Evicts these files' pages (and only theirs) from the page cache; returns how, with what stayed."""
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
