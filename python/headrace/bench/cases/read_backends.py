"""Case: read every chunk of a container into host memory through one host backend.

Axes: backend (posix, direct, mmap, uring, ram) x cache state (cold: the file's pages evicted; drop-all:
the whole machine's page cache dropped, as root; hot) x the backend's knobs.
The bytes counted are the stored bytes; checksums are checked inside the timed region (overlapped
with the next window's reads), so a result is also a proof that the data arrived intact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from headrace._deprecated import moved
from headrace.bench.harness import CacheState, Measurement
from headrace.reading import read_container

__all__ = ["sweep"]


def sweep(path: str, backends: Sequence[str], caches: Sequence[CacheState], repeats: int = 1,
          **options: Any) -> list[Measurement]:
    """Every (backend, cache) pair; ``ram`` is measured once (preloaded: the cache state does not apply)."""
    results = []
    for backend in backends:
        backend_caches: Sequence[CacheState] = ["hot"] if backend == "ram" else caches
        for cache in backend_caches:
            results.append(read_container(path, backend, cache, repeats, **options))
    return results


# The routine moved into the product with the read command; its old names here warn for one release.
__getattr__ = moved(__name__, {name: "headrace.reading" for name in ("BACKENDS", "available_backends", "read_container")})
