"""The engine: what streaming needs that outlives one stream.

A :class:`headrace.Queue` owns pinned staging, the GPU twin of staging, nvCOMP's prepared decoders,
its threads, the files it opened and the files it page-locked. Making them costs far more than reading
a hot frame (a page-locked 3 GB file takes a fraction of a second), so the process keeps one engine
per device and set of options, as KvikIO keeps its thread pool, and every :meth:`Dataset.stream`
uses it: a second stream over the same file opens nothing and pins nothing::

    for frame in ds.stream(device=0): ...           # the engine for GPU 0 is made here, once
    for frame in ds.stream(device=0): ...           # reused: no setup, the file already pinned
    headrace.shared_engine(device=0).describe()     # what it holds and why

Memory is bounded: staging (``staging_bytes``, allocated by the first read that stages), the files
page-locked (``pin_budget_bytes``, a quarter of the machine's memory, or of the cgroup's ``memory.max`` where less, unless set), the statuses kept
(``status_history``) and the slot buffers closed streams left for the next (:data:`SPARE_SLOT_BYTES`).
At most :data:`MAX_SHARED_ENGINES` engines are kept; :func:`release_engines` drops them all.
"""

from __future__ import annotations

import itertools
import os
import threading
from typing import Any

import numpy as np

from headrace import _ext
from headrace.queue import Queue
from headrace.settings import device_ordinal, queue_options

__all__ = ["MAX_SHARED_ENGINES", "SPARE_SLOT_BYTES", "Engine", "buffer_bytes", "release_engines", "release_file", "shared_engine", "shared_engines"]

# Distinct (device, options) engines the process keeps; the least recently used beyond is dropped
# (a stream that still holds it keeps it alive until it closes).
MAX_SHARED_ENGINES = 4
# Slot buffers of closed streams an engine keeps for the next stream (allocating GPU memory for a
# frame's slots costs as much as reading a hot frame); beyond this the oldest are freed.
SPARE_SLOT_BYTES = 8 << 30


class Engine:
    """One queue with everything it owns, shared by the streams that use it. ``options``: a
    :class:`headrace.QueueOptions`, and/or options and I/O knobs by name (docs/settings.md)."""

    def __init__(self, device: int | None = None, options: Any = None, **named: Any) -> None:
        _validate_device(device)
        self.device = device
        self.options = queue_options(options, device=-1 if device is None else device, **named)
        self.queue = Queue(self.options)
        self._tags = itertools.count(1)
        self._lock = threading.Lock()
        self._spare: list[Any] = []  # slot buffers of closed streams, oldest first

    def slot_buffer(self, size: int) -> Any:
        """A buffer of at least ``size`` bytes for a stream's slot (GPU memory, or host memory for a host
        engine): a spare one of closed streams when one fits without wasting half, else a new one."""
        with self._lock:
            fits = [b for b in self._spare if size <= buffer_bytes(b) <= 2 * max(size, 1)]
            if fits:
                chosen = min(fits, key=buffer_bytes)
                # By identity: list.remove compares with ==, which NumPy buffers answer element by element.
                del self._spare[next(i for i, b in enumerate(self._spare) if b is chosen)]
                return chosen
        if self.device is None:
            return np.empty(max(size, 1), dtype=np.uint8)
        return _ext.DeviceBuffer(self.device, max(size, 1))

    def keep_slot_buffers(self, buffers: list[Any]) -> None:
        """Takes back a closed stream's slot buffers, keeping at most SPARE_SLOT_BYTES of them."""
        with self._lock:
            self._spare.extend(buffers)
            while sum(buffer_bytes(b) for b in self._spare) > SPARE_SLOT_BYTES:
                self._spare.pop(0)

    def add_file(self, path: str | os.PathLike[str]) -> int:
        """The file's id in the queue: opened (and page-locked, by ``pin_files``) once per version of it."""
        return self.queue.add_file(path)

    def close_file(self, path: str | os.PathLike[str]) -> bool:
        """Lets go of a file, however it was added (unpins it, closes it); False when the engine does not
        hold it. UsageError while a stream still reads it."""
        return self.queue.close_path(path) > 0

    def new_tag(self) -> int:
        """A tag no other user of the engine has: cancelling it touches only the caller's requests."""
        with self._lock:
            return next(self._tags)

    def memory(self) -> dict[str, int]:
        """Bytes held: page-locked host memory (staging and pinned files), GPU memory of the queue, and
        spare slot buffers."""
        with self._lock:
            spare = sum(buffer_bytes(b) for b in self._spare)
        return {"pinned_host_bytes": self.queue.pinned_host_bytes, "device_bytes": self.queue.device_bytes,
                "spare_slot_bytes": spare}

    def describe(self) -> str:
        held = self.memory()
        return (f"engine device={'cpu' if self.device is None else self.device} holds "
                f"{held['pinned_host_bytes'] >> 20} MiB page-locked, {held['device_bytes'] >> 20} MiB on the GPU, "
                f"{held['spare_slot_bytes'] >> 20} MiB of spare slots; {self.queue.describe()}")

    def close(self) -> None:
        self.queue.close()


_shared: dict[tuple[Any, ...], Engine] = {}
_shared_lock = threading.Lock()


def shared_engine(device: int | str | None = None, options: Any = None, **named: Any) -> Engine:
    """The process's engine for ``device`` (a GPU ordinal, or None / "cpu" for host memory) and these
    queue options (a :class:`headrace.QueueOptions` and/or options by name), made on first use. Engines
    are told apart by the options in effect (after ``HEADRACE_<NAME>``), not by how they were given."""
    device = device_ordinal(device)
    resolved = queue_options(options, device=-1 if device is None else device, **named)
    key = (device, repr(resolved))
    with _shared_lock:
        found = _shared.pop(key, None)
        if found is None:
            found = Engine(device, resolved)
        _shared[key] = found  # most recently used last
        while len(_shared) > MAX_SHARED_ENGINES:
            del _shared[next(iter(_shared))]
        return found


def shared_engines() -> list[Engine]:
    """The engines kept, least recently used first."""
    with _shared_lock:
        return list(_shared.values())


def release_file(path: str | os.PathLike[str]) -> int:
    """Every kept engine lets go of the file (its pages unlocked): what a cold run needs before the file is
    evicted, since page-locked pages stay cached. How many engines held it."""
    return sum(engine.close_file(path) for engine in shared_engines())


def release_engines() -> None:
    """Drops every kept engine (each closes once no stream holds it): frees staging and unpins files."""
    with _shared_lock:
        _shared.clear()


def buffer_bytes(buffer: Any) -> int:
    """The bytes of a slot buffer: host (NumPy) or GPU (``_ext.DeviceBuffer``)."""
    return int(buffer.nbytes) if isinstance(buffer, np.ndarray) else int(buffer.size_bytes)


def _validate_device(device: int | None) -> None:
    """UnavailableError naming why for a GPU this machine does not have."""
    if device is not None and _ext.gpu_count() <= device:
        why = _ext.gpu_unavailable_reason() or f"{_ext.gpu_count()} GPUs"
        raise _ext.UnavailableError(f"GPU {device} unavailable: {why}; use device='cpu' for host memory")
