"""A frame's chunks of one field, read through the engine into one buffer: how a rank of a many-rank
renderer loads its share of a frame (:mod:`headrace.workloads.particles.sort_last`,
:mod:`headrace.workloads.volume.sort_last`)."""

from __future__ import annotations

from typing import Any

import numpy as np

import headrace
from headrace import _ext
from headrace.queue import destination_of

__all__ = ["frame_chunks", "read_chunks"]


def frame_chunks(container: Any, frame: int, field: str) -> np.ndarray:
    """The chunk numbers of one frame's field (the index keeps them together, in order)."""
    _, first, count = container.frame_field(frame, container.field_index(field))
    return np.arange(first, first + count)


def read_chunks(ds: Any, frame: int, field: str, positions: list[int], ordinal: int | None, size: int,
                reuse: Any = None) -> Any:
    """Chunks of a frame's field (positions among its chunks), read through the engine of GPU ``ordinal``
    (or the host's) and packed in that order into a GPU buffer or a host byte array of ``size`` bytes or
    more: ``reuse`` (the buffer of the previous frame, ready for new bytes) when it is large enough, else a
    new one. Freeing and allocating GPU memory each frame waits for the device, so frames share a buffer."""
    engine = headrace.shared_engine(ordinal)
    queue = engine.queue
    file = engine.add_file(ds.path)
    size = max(size, 32)
    buffer: Any = reuse if reuse is not None and destination_of(reuse)[1] >= size else None
    if buffer is None:
        buffer = _ext.DeviceBuffer(ordinal, size) if ordinal is not None else np.empty(size, dtype=np.uint8)
    requests = queue.enqueue_chunk_list(file, ds, frame, field, positions, buffer)
    fence = queue.enqueue_signal()
    queue.submit()
    fence.wait()
    queue.summarize(requests).raise_first_failure()
    return buffer
