"""Any point set of a file drawn as sphere glyphs, frame by frame: read on the host, packed into the
renderer's records (:class:`headrace.workloads.points.PointSet`) and drawn by the CPU reference or, copied
into GPU memory, by the CUDA kernels, which draw the same records into the same image."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

import headrace
from headrace import _ext
from headrace.imaging import camera_spec, frame_of, packed_background, parse_camera
from headrace.workloads.points.point_set import RECORD_FIELD, PointSet, is_particle_record
from headrace.workloads.points.staged import StagedPoints

__all__ = ["POINT_OPTIONS", "PointSetRenderer", "draws_point_set"]

POINT_OPTIONS = ("positions", "radius", "colour", "colour_by", "colour_map", "colour_range")


class PointSetRenderer:
    """Any point set of a file (:class:`PointSet`: positions of any type, radius and colour from fields or
    defaults, colour by any field) drawn as sphere glyphs: each frame's fields are read on the host,
    packed into the renderer's records and drawn by the CPU reference (``device="cpu"``) or, copied into
    GPU memory (:func:`headrace.workloads.points.upload`), by the CUDA kernels (``device=0``), which draw
    the same records into the same image. Camera and image options as for
    :class:`headrace.workloads.particles.StreamingRenderer`; ``positions``, ``radius``, ``colour``,
    ``colour_by``, ``colour_map``, ``colour_range`` as for :class:`PointSet` (:attr:`points`, whose
    ``describe()`` says what was chosen)."""

    def __init__(self, source: Any, *, device: int | str | None = "cpu", camera: str = "orbit:30,20",
                 width: int = 1024, height: int = 768, fov: float = 45.0, background: Sequence[int] = (0, 0, 0),
                 threads: int = 0, camera_frame: int = 0, **point_options: Any) -> None:
        self.dataset = ds = source if hasattr(source, "read") else headrace.open(os.fspath(source))
        self.ordinal = -1 if device in (None, "cpu") else int(device)
        self.points = PointSet(ds, camera_frame=frame_of(ds, camera_frame), **point_options)
        view = camera_spec(width, height, fov, **parse_camera(camera, self.points.home_box))
        self._renderer = _ext.FrameRenderer(view, packed_background(background), self.ordinal, int(threads))
        look = self.points.look()
        if look:
            self._renderer.set_look(**look)
        self._renderer.clear()
        self._image = self._renderer.image()

    def render(self, frame: int) -> dict[str, Any]:
        """Reads frame ``frame`` (negative: from the end) and draws it: its statistics (seconds, read
        seconds, draw seconds, points, device)."""
        frame = frame_of(self.dataset, frame)
        start = time.perf_counter()
        records, scalars = self.points.pack(self.points.read(frame))
        read = time.perf_counter()
        self._image = StagedPoints(records, scalars, None if self.ordinal < 0 else self.ordinal).draw(self._renderer)
        done = time.perf_counter()
        return {"seconds": done - start, "read_seconds": read - start, "draw_seconds": done - read,
                "points": len(records), "device": "cpu" if self.ordinal < 0 else self.ordinal}

    def image(self) -> np.ndarray:
        """The last frame's image (the background before the first)."""
        return self._image


def draws_point_set(ds: Any, field: str | None = None, **point_options: Any) -> bool:
    """Whether a particle file is drawn as a point set (:class:`PointSetRenderer`): a point option is given,
    or the field to draw (default ``particles``) is not the renderer's record; else it streams
    (:class:`headrace.workloads.particles.StreamingRenderer`)."""
    return any(point_options.get(name) is not None for name in POINT_OPTIONS) or not is_particle_record(
        ds, field or RECORD_FIELD)
