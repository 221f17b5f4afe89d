"""How each frame of a file would reach its destination now, and why: the question users of GPUDirect
Storage ask first (``headrace info FILE``).

The engine answers for itself: a queue made as ``ds.stream()`` makes it (the same options, the same
device) adds the file, with the page-locking a stream's queue would do, and routes every chunk without
reading or queueing it (``Queue.explain_frames``, the routing of ``Queue::enqueue``). Each chunk gets a read
route (page-locked pages, the page cache, the disk by O_DIRECT, the disk buffered and kept, cuFile) and a
transfer (a copy, DMA from the file's pages, decoding on the GPU or the CPU). Consecutive frames routed
alike are one run. Beside each read route, the rate the last probe kept for this file system measured for
it (:func:`headrace.probe.kept_probe`), and what the engine's own routes reached there
(:func:`measure_engine_routes`, which ``headrace probe`` runs and keeps: ``cache_policy="auto"`` reads cold
files by the faster, :func:`headrace.probe.cold_reads`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from headrace import _ext, page_cache, probe, settings
from headrace.dataset import open as open_dataset
from headrace.errors import UsageError
from headrace.queue import Queue

__all__ = ["FrameRun", "Routes", "RouteGroup", "explain", "measure_engine_routes"]


@dataclass(frozen=True)
class RouteGroup:
    """Chunks of a frame's field that travel alike."""

    read: str  #: pinned, page-cache, disk, kept, cufile or forced
    transfer: str  #: copy, dma, gpu-decode, cpu-decode, host, host-decode, cufile or unavailable
    chunks: int
    stored_bytes: int
    raw_bytes: int


@dataclass(frozen=True)
class FrameRun:
    """Consecutive frames of one field whose chunks are routed alike (bytes summed over the run)."""

    field: str
    first_frame: int
    last_frame: int
    groups: tuple[RouteGroup, ...]


@dataclass
class Routes:
    """A file's routes on one destination, each route's words, and what the last probe measured."""

    file: str
    device: str  #: "cpu" or the GPU's number
    runs: list[FrameRun]
    details: dict[str, str]  #: each read and transfer key in words
    why: str  #: the file's pin decision and cache choice, and any fallback
    configuration: str  #: the queue's describe()
    file_system: dict[str, str]
    probe: dict[str, Any] | None  #: the last probe kept for the file system, or None
    rates: dict[str, str] = field(default_factory=dict)  #: per read key, what measured its rate

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "device": self.device, "why": self.why, "configuration": self.configuration,
                "file_system": self.file_system, "probe": self.probe, "details": self.details, "rates": self.rates,
                "runs": [{"field": run.field, "frames": [run.first_frame, run.last_frame],
                          "routes": [vars(group) for group in run.groups]} for run in self.runs]}


def measure_engine_routes(path: str | os.PathLike[str], device: int | str | None = None, *, most_bytes: int = 2 << 30,
                          request_bytes: int = 4 << 20) -> probe.EngineRoutes:
    """One cold pass over the first ``most_bytes`` of ``path`` (the probe's test file) through a queue with each
    of its routes for uncached bytes, O_DIRECT and buffered with the kernel reading ahead, into ``device``'s
    memory (None: GPU 0 where there is one, else the host) in requests of ``request_bytes`` as a stream asks
    for chunks; the file's pages evicted before each pass and after, nothing page-locked or held."""
    if device is None:
        device = 0 if _ext.gpu_count() else "cpu"
    ordinal = settings.device_ordinal(device)
    path = os.fspath(path)
    size = min(os.path.getsize(path), most_bytes) // request_bytes * request_bytes
    if size == 0:
        raise UsageError(f"{path}: fewer than {request_bytes:,} bytes to read through the engine")
    # Host memory faulted in before the clocks (np.zeros maps pages it never wrote: O_DIRECT into them
    # faulted each in inside the first pass, 0.27 GB/s on a disk of 2).
    destination: Any = np.ones(size + 4096, np.uint8) if ordinal is None else _ext.DeviceBuffer(ordinal, size)
    # O_DIRECT reads land in a host destination as they are only where it lies on a 4 KiB boundary.
    base, kind = ((destination.ctypes.data + 4095) // 4096 * 4096, "host") if ordinal is None else (destination.pointer, "device")
    rates: dict[str, float] = {}
    for route, policy in (("direct", "bypass"), ("buffered", "keep")):
        page_cache.evict_from_page_cache([path])
        with Queue(device=device, cache_policy=policy, pin_files="off") as queue:
            file = queue.add_file(path)
            started = time.perf_counter()
            for offset in range(0, size, request_bytes):
                queue.native.enqueue(file, offset, request_bytes, request_bytes, base + offset, kind=kind)
            queue.submit()
            queue.drain()
            rates[route] = size / (time.perf_counter() - started) / 1e9
    page_cache.evict_from_page_cache([path])  # what was read leaves no one a hot file
    return probe.EngineRoutes(rates["direct"], rates["buffered"], size, "host" if ordinal is None else f"gpu {ordinal}")


def _rates(kept: dict[str, Any] | None) -> dict[str, str]:
    """Per read route, the rate the kept probe measured for it (or where a rate comes from instead)."""
    if kept is None:
        missing = "no probe kept for this file system (headrace probe FOLDER on it measures and keeps one)"
        return {"disk": missing, "kept": missing}
    when = f"probe of {kept.get('probed_at', '?')}"
    ceiling, ahead = kept.get("ceiling"), kept.get("read_ahead")
    rates = {"disk": f"{ceiling['gigabytes_per_second']:.2f} GB/s, O_DIRECT ({when})" if ceiling else "the probe measured no sequential point"}
    rates["kept"] = (f"{ahead['gigabytes_per_second']:.2f} GB/s, buffered with the kernel reading ahead ({when})" if ahead
                     else "the probe measured no buffered read-ahead")
    engine = kept.get("engine_routes")
    if engine:  # what the engine's own routes reached there, which auto chooses between
        rates["disk"] += f"; through the engine into {engine['destination']}: {engine['direct_gigabytes_per_second']:.2f} GB/s"
        rates["kept"] += f"; through the engine into {engine['destination']}: {engine['buffered_gigabytes_per_second']:.2f} GB/s"
    rates["page-cache"] = rates["pinned"] = rates["held"] = "memory speed (not probed: headrace bench measures it)"
    return rates


def explain(path: str | os.PathLike[str], device: int | str | None = "cpu", fields: list[str] | None = None,
            options: Any = None, **named: Any) -> Routes:
    """How every frame of ``fields`` (all by default) would be read into ``device``'s memory now, by a
    queue of ``options`` and ``named`` queue options (``headrace.queue_options``), as a stream would."""
    ds = open_dataset(path)
    names = fields or [f.name for f in ds.fields]
    for name in names:
        ds.field(name)  # a usage error naming the fields there are
    ordinal = settings.device_ordinal(device)
    runs: list[FrameRun] = []
    details: dict[str, str] = {}
    with Queue(options, device=device, **named) as queue:
        file = queue.add_file(ds.path)
        why = ""
        for name in names:
            frames, words, why = queue.native.explain_frames(file, ds.container, ds.container.field_index(name),
                                                             "host" if ordinal is None else "device")
            details.update(words)
            for number, groups in enumerate(frames):
                routed = tuple(RouteGroup(*group) for group in groups)
                last = runs[-1] if runs and runs[-1].field == name else None
                if last is not None and [(g.read, g.transfer, g.chunks) for g in last.groups] == \
                        [(g.read, g.transfer, g.chunks) for g in routed]:
                    merged = tuple(RouteGroup(a.read, a.transfer, a.chunks, a.stored_bytes + b.stored_bytes,
                                              a.raw_bytes + b.raw_bytes) for a, b in zip(last.groups, routed))
                    runs[-1] = FrameRun(name, last.first_frame, number, merged)
                else:
                    runs.append(FrameRun(name, number, number, routed))
        configuration = queue.native.describe()
    kept = probe.kept_probe(ds.path)
    return Routes(ds.path, "cpu" if ordinal is None else str(ordinal), runs, details, why, configuration,
                  probe.file_system_of(ds.path), kept, _rates(kept))
