"""The only clock of headrace's measurements: repeats, cache state and results, for the lab's cases.

The clock itself (:func:`measure`, :class:`Measurement`) and the page-cache states it prepares
(:mod:`headrace.page_cache`: cold evicts the file's pages only, ``drop-all`` drops the whole machine's
cache, as root) live in the product, whose ``read`` command measures too; results are written whole
(:func:`headrace._files.write_rows`). The lab takes them from here.
"""

from __future__ import annotations

import time

from headrace._files import read_rows, write_rows
from headrace.measurement import Measurement, measure, write_csv
from headrace.page_cache import (
    CACHE_STATES,
    CacheState,
    drop_all_page_caches,
    drop_page_cache,
    evict_from_page_cache,
    uncache,
    warm_page_cache,
)

__all__ = ["CacheState", "CACHE_STATES", "Measurement", "Stopwatch", "drop_page_cache", "evict_from_page_cache", "drop_all_page_caches",
           "uncache", "warm_page_cache", "measure", "write_csv", "read_rows", "write_rows"]


class Stopwatch:
    """The harness's clock for what a case times inside or beside :func:`measure`'s body (a setup step,
    a steady-state frame, a peer's pass in its own process, a browser's playback, a deadline): seconds
    since it was started, on the clock :func:`measure` reads."""

    def __init__(self) -> None:
        self._start = time.perf_counter()

    def seconds(self) -> float:
        """Seconds since the start."""
        return time.perf_counter() - self._start

    def lap(self) -> float:
        """Seconds since the start, the start moved to now (one reading: laps add up to the whole)."""
        now = time.perf_counter()
        elapsed, self._start = now - self._start, now
        return elapsed

    def seconds_to(self, stamp: float) -> float:
        """Seconds from the start to ``stamp``, a ``time.perf_counter()`` reading taken elsewhere (the
        viewer's protocol client stamps each image it receives so)."""
        return stamp - self._start
