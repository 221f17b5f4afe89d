"""The only clock of headrace's measurements: repeats, cache state and results, for the lab's cases.

The clock itself (:func:`measure`, :class:`Measurement`) and the page-cache states it prepares
(:mod:`headrace.page_cache`: cold evicts the file's pages only, ``drop-all`` drops the whole machine's
cache, as root) live in the product, whose ``read`` command measures too; results are written whole
(:func:`headrace._files.write_rows`). The lab takes them from here.
"""

from __future__ import annotations

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

__all__ = ["CacheState", "CACHE_STATES", "Measurement", "drop_page_cache", "evict_from_page_cache", "drop_all_page_caches",
           "uncache", "warm_page_cache", "measure", "write_csv", "read_rows", "write_rows"]
