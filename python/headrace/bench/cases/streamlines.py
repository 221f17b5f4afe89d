"""The experiments of Jiang, Van Essen, Harrison and Gokhale, "Multi-Threaded Streamline Tracing for
Data-Intensive Architectures", on our tracer (the figures named are the paper's): each study declares
its axes; the harness owns the clock and the cache state (by default cold: the file's pages evicted
before every repeat).

- ``io``: standard against direct I/O in hilbert-user over chunk sizes and thread counts (figure 4);
- ``banks``: hilbert-user at two chunk sizes over bank counts (figure 5);
- ``madvise``: native-mmap and hilbert-mmap without and with madvise at several intervals (figure 6);
- ``concurrency``: hilbert-user over chunk sizes and threads, hilbert-mmap as the line to beat (figure 7);
- ``scaling``: the four implementations from 1 to 64 threads, strong (fixed seeds) and weak (seeds
  grow with the threads) (figure 8);
- ``gpu``: the GPU tracer (the resident cache on GPU 0, both layouts) against the four CPU
  implementations and the resident rounds on CPU threads, at each thread count, on the same seeds.

Every study gives each data manager the same memory: the cache's ``cache_bytes``, and for mmap a
page-cache budget of as much, so that a data set several times larger stays out of core.

Every row keeps the run's counters (hits, misses, evictions, bytes read, madvise calls) beside its time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from headrace.workloads import streamlines
from headrace.bench.harness import CacheState, Measurement, measure

__all__ = ["Setup", "STUDIES", "configurations", "run_configuration", "weak_seeds"]

STUDIES = ("io", "banks", "madvise", "concurrency", "scaling", "gpu")


@dataclass(frozen=True)
class Setup:
    """What every configuration of a study shares: the two layouts of one field, seeds and length."""

    native: str
    hilbert: str
    seeds: np.ndarray
    steps: int
    step_size: float
    cache_bytes: int
    threads: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64)
    chunk_pages: tuple[int, ...] = (3, 12, 48, 96, 384, 1536)
    unit_pages: int = 96  # the tuned Hilbert unit of the scaling study (the paper's: 96 pages)
    scalings: tuple[str, ...] = ("strong", "weak")  # the scaling study's halves


def configurations(study: str, setup: Setup) -> Iterator[dict[str, Any]]:
    """The study's points: keyword arguments of :func:`headrace.workloads.streamlines.trace_run` plus ``path``,
    ``implementation`` and, for weak scaling, ``seed_factor``."""
    top = max(setup.threads)
    if study == "io":
        for direct in (False, True):
            for pages in setup.chunk_pages:
                for threads in sorted({2, 8, top}):
                    yield dict(implementation="hilbert-user", path=setup.hilbert, manager="user", direct=direct,
                               unit_pages=pages, threads=threads)
    elif study == "banks":
        for pages in (12, 96):
            for banks in sorted({1, 2, 4, 8, 16, 32, top}):
                yield dict(implementation="hilbert-user", path=setup.hilbert, manager="user", direct=True,
                           unit_pages=pages, banks=banks, threads=top)
    elif study == "madvise":
        for implementation, path in (("native-mmap", setup.native), ("hilbert-mmap", setup.hilbert)):
            for interval in (0.0, 1.0, 4.0, 16.0):
                for threads in sorted({8, top}):
                    yield dict(implementation=implementation, path=path, manager="mmap", madvise_interval_s=interval,
                               memory_budget_bytes=setup.cache_bytes, threads=threads)
    elif study == "concurrency":
        for threads in sorted({2, 8, top}):
            for pages in setup.chunk_pages:
                yield dict(implementation="hilbert-user", path=setup.hilbert, manager="user", direct=True,
                           unit_pages=pages, threads=threads)
            yield dict(implementation="hilbert-mmap", path=setup.hilbert, manager="mmap", madvise_interval_s=4.0,
                       memory_budget_bytes=setup.cache_bytes, threads=threads)
    elif study == "scaling":
        for scaling in setup.scalings:
            for implementation, path, manager in _four(setup):
                for threads in setup.threads:
                    yield dict(implementation=implementation, path=path, threads=threads, scaling=scaling,
                               seed_factor=threads if scaling == "weak" else 1, **_tuned(setup, manager, threads))
    elif study == "gpu":
        for threads in setup.threads:
            for implementation, path, manager in _four(setup):
                yield dict(implementation=implementation, path=path, threads=threads, **_tuned(setup, manager, threads))
            yield dict(implementation="native-resident-cpu", path=setup.native, manager="resident", device="cpu",
                       threads=threads)
        yield dict(implementation="native-gpu", path=setup.native, manager="resident", device=0)
        yield dict(implementation="hilbert-gpu", path=setup.hilbert, manager="resident", device=0,
                   unit_pages=setup.unit_pages)
    else:
        raise ValueError(f"unknown study {study!r}: expected one of {', '.join(STUDIES)}")


def _four(setup: Setup) -> tuple[tuple[str, str, str], ...]:
    """The paper's four implementations: (name, file, data manager)."""
    return (("native-user", setup.native, "user"), ("native-mmap", setup.native, "mmap"),
            ("hilbert-user", setup.hilbert, "user"), ("hilbert-mmap", setup.hilbert, "mmap"))


def _tuned(setup: Setup, manager: str, threads: int) -> dict[str, Any]:
    """The paper's tuned settings: direct I/O, 96-page Hilbert units, banks = threads; madvise every 4 s
    (and a page-cache budget of the cache's size)."""
    if manager == "user":
        return dict(manager=manager, direct=True, unit_pages=setup.unit_pages, banks=threads)
    return dict(manager=manager, madvise_interval_s=4.0, memory_budget_bytes=setup.cache_bytes)


def weak_seeds(seeds: np.ndarray, factor: int, path: str) -> np.ndarray:
    """``factor`` copies of the seeds for weak scaling, each copy after the first moved by up to half a
    grid spacing along each axis (seeded, so every run gets the same): distinct lines through the same
    region, as much work per copy, none a duplicate that rides on its twin's cache loads."""
    spacing = np.asarray(streamlines.grid_of(path)[2], dtype=np.float64)
    rng = np.random.default_rng(2)
    copies = [seeds] + [seeds + (rng.uniform(-0.5, 0.5, seeds.shape) * spacing).astype(np.float32)
                        for _ in range(factor - 1)]
    return np.concatenate(copies).astype(np.float32)


def run_configuration(study: str, setup: Setup, options: dict[str, Any], repeats: int,
                      cache: CacheState = "cold") -> Measurement:
    """One point, in the cache state ``cache`` before every repeat (cold: the file's pages evicted);
    bytes = the bytes the data manager read (0 for mmap)."""
    options = dict(options)
    path, implementation = options.pop("path"), options.pop("implementation")
    scaling, factor = options.pop("scaling", ""), options.pop("seed_factor", 1)
    seeds = weak_seeds(setup.seeds, factor, path) if factor > 1 else setup.seeds
    results: list[Any] = []

    def body() -> int:
        results.append(streamlines.trace_run(path, seeds, steps=setup.steps, step_size=setup.step_size,
                                             cache_bytes=setup.cache_bytes, **options))
        return int(results[-1].stats["bytes_read"])

    parameters = {"study": study, "implementation": implementation, "scaling": scaling, "seeds": len(seeds),
                  "steps": setup.steps, "cache_bytes": setup.cache_bytes, **options}
    measured = measure(f"streamlines/{study}/{implementation}", body, files=[path], cache=cache, repeats=repeats,
                       parameters=parameters)
    last = results[-1].stats
    measured.parameters.update({k: last[k] for k in ("seconds", "cache_hits", "cache_misses", "cache_evictions",
                                                     "cache_waits", "max_loads_in_flight", "madvise_calls",
                                                     "budget_drops", "unit_bytes", "resident_rounds",
                                                     "resident_units_loaded", "resident_load_seconds",
                                                     "resident_advance_seconds")})
    measured.parameters["streamlines_per_s"] = len(seeds) / min(measured.seconds)
    measured.parameters["points"] = last["points"]
    return measured
