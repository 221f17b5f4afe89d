"""The fastest streaming configuration for this machine and data set, found within a time budget
(``headrace tune``): Müller and Ertl, "Quantifying Performance Gains of DirectStorage for the
Visualisation of Time-Dependent Particle Data Sets", leave open which configuration is best on a given
machine; this finds it automatically.

The factor space (:class:`Space`: the streaming method, particles per batch, batches in flight and
staging bytes) is the one ``headrace bench particles`` measures; :func:`grid` enumerates it and
:func:`sample` draws from it. The search: random sampling of the factor space for the first half of the
budget, then refinement of the best: its neighbours (the next level up and down of each factor, and
each other method at its factors) measured while they improve on it, until the budget is spent. Each
configuration is timed as ``headrace bench particles`` times it (:mod:`headrace.bench.cases.particles`)
over a short wall time. The winner is stored as this machine's profile (``$HEADRACE_PROFILES`` or
``~/.config/headrace/profiles.json``, one entry per machine, device and codec) and becomes the default
of ``headrace render`` and of the streamer's backend.
"""

from __future__ import annotations

import json
import math
import os
import platform
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from headrace import _ext
from headrace._files import replacing
from headrace.errors import Error

__all__ = ["Space", "grid", "sample", "machine", "Tuning", "NothingRan", "tune", "default_configuration", "profile_path",
           "load_profile", "save_profile", "machine_key"]

FACTORS = ("batch", "segments", "staging_bytes")


@dataclass(frozen=True)
class Space:
    """The factor levels of a study (the paper's: batches of 128k, 500k and 1M particles; 2 to 256 in flight)."""

    methods: tuple[str, ...] = ("ram", "mmap-all", "mmap-segment", "mmap-batch", "pread", "direct", "uring-naive",
                                "uring-batched")
    batches: tuple[int, ...] = (128_000, 500_000, 1_000_000)
    segments: tuple[int, ...] = (2, 4, 16, 64, 256)
    staging_bytes: tuple[int, ...] = (64 << 20, 256 << 20, 1 << 30)


def grid(space: Space) -> Iterator[dict[str, Any]]:
    for method in space.methods:
        for batch in space.batches:
            for segments in space.segments:
                for staging in space.staging_bytes:
                    yield dict(method=method, batch=batch, segments=segments, staging_bytes=staging)


def sample(space: Space, n: int, seed: int = 0) -> Iterator[dict[str, Any]]:
    """``n`` distinct configurations: the method and the staging size uniform over their levels, the batch
    size log-uniform between the smallest and largest level, the segments log-uniform over powers of two."""
    rng = random.Random(seed)
    seen: set[tuple[Any, ...]] = set()
    low, high = math.log(min(space.batches)), math.log(max(space.batches))
    lo_seg, hi_seg = int(math.log2(min(space.segments))), int(math.log2(max(space.segments)))
    for _ in range(100 * n):
        if len(seen) == n:
            return
        config = dict(method=rng.choice(space.methods), batch=int(round(math.exp(rng.uniform(low, high)), -3)),
                      segments=2 ** rng.randint(lo_seg, hi_seg), staging_bytes=rng.choice(space.staging_bytes))
        key = tuple(config.values())
        if key not in seen:
            seen.add(key)
            yield config


def machine() -> dict[str, Any]:
    """What the row was measured on: CPU, cores, memory, GPU, kernel."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    environment = _ext.gpu_environment()
    gpus = environment.get("gpus") or []
    gpu = "; ".join(str(d.get("name", d)) for d in gpus) if gpus else "none"
    return {"machine_cpu": cpu, "machine_cores": os.cpu_count(), "machine_memory_gib": round(memory, 1),
            "machine_gpu": gpu, "machine_kernel": platform.release()}


@dataclass
class Tuning:
    best: dict[str, Any]
    best_seconds: float
    evaluations: list[dict[str, Any]] = field(default_factory=list)  # every configuration and its frame time


class NothingRan(Error):
    """No configuration could run; ``evaluations`` holds each one tried and why it could not."""

    def __init__(self, evaluations: list[dict[str, Any]]) -> None:
        first = f"; the first, {evaluations[0]['method']}: {evaluations[0]['error']}" if evaluations else ""
        super().__init__(f"none of the {len(evaluations)} configurations tried could run{first}")
        self.evaluations = evaluations


def _levels(space: Space) -> dict[str, tuple[Any, ...]]:
    return {"batch": tuple(sorted(space.batches)), "segments": tuple(sorted(space.segments)),
            "staging_bytes": tuple(sorted(space.staging_bytes))}


def _neighbours(config: dict[str, Any], space: Space) -> list[dict[str, Any]]:
    levels = _levels(space)
    out = []
    for factor in FACTORS:
        values = levels[factor]
        if config[factor] in values:
            i = values.index(config[factor])
            out += [{**config, factor: values[j]} for j in (i - 1, i + 1) if 0 <= j < len(values)]
    out += [{**config, "method": m} for m in space.methods if m != config["method"]]
    return out


def tune(evaluate: Callable[[dict[str, Any]], float], space: Space, budget_seconds: float, *, seed: int = 0,
         start_with: tuple[dict[str, Any], ...] = (), clock: Callable[[], float] = time.monotonic) -> Tuning:
    """Searches ``space`` for the configuration of least frame time: ``evaluate(config)`` returns its frame
    time in seconds, or raises headrace.Error when it cannot run (skipped, and kept in ``evaluations``
    with why). ``start_with`` (the defaults, say) are measured first, so the result is never worse than
    they measured. :class:`NothingRan` when no configuration could run within the budget."""
    start = clock()
    seen: dict[tuple[Any, ...], float] = {}
    evaluations: list[dict[str, Any]] = []

    def run(config: dict[str, Any]) -> float:
        key = tuple(config[k] for k in ("method", *FACTORS))
        if key not in seen:
            try:
                seen[key] = evaluate(config)
            except Error as why:
                seen[key] = float("inf")
                evaluations.append({**config, "error": str(why)})
                return seen[key]
            evaluations.append({**config, "frame_seconds": seen[key]})
        return seen[key]

    rng = random.Random(seed)
    shuffled = list(grid(space))
    rng.shuffle(shuffled)
    best, best_time = None, float("inf")
    for config in [*start_with, *shuffled]:  # phase 1: random sampling, half the budget (and at least one point)
        if clock() - start > (budget_seconds / 2 if best is not None else budget_seconds):
            break
        seconds = run(config)
        if seconds < best_time:
            best, best_time = config, seconds
    if best is None:
        raise NothingRan(evaluations)
    improved = True
    while improved and clock() - start <= budget_seconds:  # phase 2: hill-climb from the best
        improved = False
        for config in _neighbours(best, space):
            if clock() - start > budget_seconds:
                break
            seconds = run(config)
            if seconds < best_time:
                best, best_time, improved = config, seconds, True
                break
    return Tuning(best=best, best_seconds=best_time, evaluations=evaluations)


def default_configuration(device: int | str, codec: str) -> dict[str, Any]:
    """What the renderer uses without a profile: the engine's read path (``auto``: what the page cache
    holds is read buffered or DMA'd from its page-locked pages, the rest O_DIRECT; compressed chunks
    decoded on the GPU), batches of 1 Mi particles, 16 in flight (requests batched, as AMD's talk
    "DirectStorage: Optimizing Load-Time and Streaming" advises), 256 MiB of staging (docs/results.md:
    hot frames at the pinned H2D rate, cold ones at the disk's)."""
    method = "auto"
    return {"method": method, "batch": 1 << 20, "segments": 16, "staging_bytes": 256 << 20}


def profile_path() -> Path:
    return Path(os.environ.get("HEADRACE_PROFILES") or Path.home() / ".config" / "headrace" / "profiles.json")


def machine_key(device: int | str) -> str:
    m = machine()
    return f"{m['machine_cpu']} x{m['machine_cores']} | {m['machine_gpu']} | device {device}"


def load_profile(device: int | str, codec: str = "none") -> dict[str, Any] | None:
    """The tuned configuration of this machine, device and codec, or None."""
    try:
        profiles = json.loads(profile_path().read_text())
    except (OSError, ValueError):
        return None
    return profiles.get(machine_key(device), {}).get(codec)


def save_profile(device: int | str, codec: str, config: dict[str, Any], frame_seconds: float, source: str) -> Path:
    """Stores the winner (through a temporary file and rename); returns the file."""
    path = profile_path()
    try:
        profiles = json.loads(path.read_text())
    except (OSError, ValueError):
        profiles = {}
    profiles.setdefault(machine_key(device), {})[codec] = {**config, "frame_seconds": frame_seconds, "tuned_on": source,
                                                           "tuned_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    path.parent.mkdir(parents=True, exist_ok=True)
    with replacing(path) as partial:
        Path(partial).write_text(json.dumps(profiles, indent=2))
    return path
