"""Timed repeats of one case under a page-cache state (:mod:`headrace.page_cache`): the clock of every
measurement headrace reports, the ``read`` command's and the lab's (:mod:`headrace.bench.harness`)."""

from __future__ import annotations

import os
import resource
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from headrace import _ext, page_cache
from headrace._files import write_rows
from headrace.page_cache import CacheState

__all__ = ["STAGES", "CpuByStage", "Measurement", "cpu_by_stage", "measure", "write_csv"]


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
    # The process's CPU seconds in each repeat, user and system, all its threads (a reader's in this
    # process, KvikIO's among them): what the bytes cost the host (seeds 001 and 004).
    cpu_user_seconds: list[float] = field(default_factory=list)
    cpu_system_seconds: list[float] = field(default_factory=list)

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

    @property
    def cpu_seconds_per_gb(self) -> float | None:
        """The median repeat's CPU seconds (user + system) per GB moved; None when not recorded."""
        if not self.cpu_user_seconds or self.bytes <= 0:
            return None
        spent = [user + system for user, system in zip(self.cpu_user_seconds, self.cpu_system_seconds)]
        return statistics.median(spent) / (self.bytes / 1e9)

    def as_row(self) -> dict[str, object]:
        row = {k: v for k, v in asdict(self).items()
               if k not in ("seconds", "parameters", "cpu_user_seconds", "cpu_system_seconds")}
        row.update(self.parameters)
        row.update(
            repeats=len(self.seconds),
            seconds_min=min(self.seconds),
            seconds_median=statistics.median(self.seconds),
            best_gbps=round(self.best_gbps, 4),
            median_gbps=round(self.median_gbps, 4),
            spread=round(self.spread, 4),
        )
        if self.cpu_user_seconds:
            row.update(cpu_user_s_median=round(statistics.median(self.cpu_user_seconds), 4),
                       cpu_system_s_median=round(statistics.median(self.cpu_system_seconds), 4),
                       cpu_s_per_gb=round(self.cpu_seconds_per_gb or 0.0, 4))
        return row


def process_cpu_seconds() -> tuple[float, float]:
    """The process's CPU seconds so far, user and system, every thread of it (a reader's in this process,
    KvikIO's among them): two readings apart are what the work between them cost the host."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


# Threads the kernel starts for a process's io_uring (buffered reads punted to workers, SQ polling):
# their CPU is the reads'.
_KERNEL_IO_THREADS = ("iou-wrk-", "iou-sqp-")
STAGES = ("io", "finish", "engine", "other")


def _thread_cpu_seconds(task: str) -> float:
    """One thread's CPU seconds (user + system): its CPU-time clock, exact to the nanosecond (Linux's
    clock of a thread of this process, by its id), else /proc's ticks."""
    tid = int(task)
    try:
        return time.clock_gettime((~tid << 3) | 6)  # MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)
    except OSError:
        with open(f"/proc/self/task/{task}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class CpuByStage:
    """A process's CPU seconds so far by the engine's stage: ``io`` (its readers' threads and io_uring's
    kernel workers: reads, and copies out of the page cache by pread), ``finish`` (its finishers' and
    checkers' threads: checksums, CPU decoding, copies to host destinations, GPU copies issued),
    ``engine`` (dispatching and completing) and ``other`` (everything else: the caller's own threads,
    Python, CUDA's). Two snapshots apart (:meth:`since`) say what the work between them cost each stage;
    take both while the engine lives (a thread that ends between them takes its seconds with it, which
    then count as other)."""

    total: float
    stages: dict[str, float]

    def since(self, before: CpuByStage) -> dict[str, float]:
        spent = {stage: max(0.0, self.stages.get(stage, 0.0) - before.stages.get(stage, 0.0))
                 for stage in STAGES if stage != "other"}
        spent["other"] = max(0.0, self.total - before.total - sum(spent.values()))
        return spent


def cpu_by_stage() -> CpuByStage:
    """A snapshot of this process's CPU seconds by stage (Linux; elsewhere everything is ``other``)."""
    names = _ext.thread_stages()
    stages: dict[str, float] = dict.fromkeys(STAGES, 0.0)
    user, system = process_cpu_seconds()
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return CpuByStage(user + system, stages)
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/comm") as comm:
                name = comm.read().strip()
            stage = names.get(name) or ("io" if name.startswith(_KERNEL_IO_THREADS) else None)
            if stage is not None:
                stages[stage] += _thread_cpu_seconds(task)
        except (OSError, ValueError):
            continue  # the thread ended while it was looked at
    return CpuByStage(user + system, stages)


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
    user: list[float] = []
    system: list[float] = []
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
            method = page_cache.uncache(files, cache)
        elif repeat == 0:  # hot: one read fills the cache for every repeat
            method = page_cache.warm_page_cache(files)
        before = process_cpu_seconds()
        start = time.perf_counter()
        moved = body()
        seconds.append(time.perf_counter() - start)
        after = process_cpu_seconds()
        user.append(after[0] - before[0])
        system.append(after[1] - before[1])
    return Measurement(case, moved, seconds, cache, method, dict(parameters or {}), user, system)


def write_csv(path: str, measurements: Sequence[Measurement]) -> None:
    """Writes one row per measurement (temporary file + rename)."""
    write_rows(path, [m.as_row() for m in measurements])
