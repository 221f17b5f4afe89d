"""A frame's packed point records where the renderer draws them: host arrays for the CPU reference, one
buffer in GPU memory for a GPU renderer (copied once, drawn again after a camera or look change)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from headrace import _ext

__all__ = ["upload", "StagedPoints"]


def upload(parts: Sequence[np.ndarray], device: int | None) -> tuple[Any, list[int]]:
    """Host arrays copied one after the other (256-byte aligned) into one new buffer in GPU ``device``'s
    memory (a host array for None): the buffer and each array's address in it."""
    offsets, total = [], 0
    for part in parts:
        total = -(-total // 256) * 256
        offsets.append(total)
        total += part.nbytes
    size = max(total, 1)
    buffer: Any = np.empty(size, dtype=np.uint8) if device is None else _ext.DeviceBuffer(device, size)
    base = buffer.ctypes.data if device is None else buffer.pointer
    for part, offset in zip(parts, offsets):
        raw = np.ascontiguousarray(part).reshape(-1).view(np.uint8)
        if device is None:
            buffer[offset : offset + raw.size] = raw
        else:
            buffer.copy_from_host(raw, offset)
    return buffer, [base + offset for offset in offsets]


class StagedPoints:
    """A frame's packed records (and its colour-by values) where the renderer draws them: the host arrays
    for the CPU reference, one GPU buffer for a GPU renderer (copied once by :func:`upload`, so a camera
    or look change draws them again without another copy)."""

    def __init__(self, records: np.ndarray, scalars: np.ndarray | None, device: int | None) -> None:
        self.count = len(records)
        self._host = (records, scalars)
        self._buffer: Any = None
        self._addresses = (0, 0)
        if device is not None:
            self._buffer, addresses = upload([records] if scalars is None else [records, scalars], device)
            self._addresses = (addresses[0], addresses[1] if scalars is not None else 0)

    def draw(self, renderer: Any, stream: int = 0) -> np.ndarray:
        """The image of these points alone (``renderer``: an ``_ext.FrameRenderer``; its CUDA ``stream``)."""
        renderer.clear(stream)
        if self._buffer is None:
            records, scalars = self._host
            renderer.draw_host(records, 0, scalars)
        elif self.count:
            renderer.draw_device(self._addresses[0], self.count, 0, stream, self._addresses[1])
        return renderer.image(stream)  # once the draw is done: the buffer lives as long as this object
