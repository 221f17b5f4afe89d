"""Images of particle frames, one call each (seed ``000_…``, section 3).

    image = headrace.workloads.particles.render_frame("p.hrc", 0, width=1024, height=768, camera="orbit:30,20")
    headrace.imaging.write_image("frame.png", image)

Every particle (x, y, z, radius, r, g, b, a; the ``particles`` field of ``headrace generate particles``)
is a ray-cast sphere with a correct depth and headlight shading, streamed through the engine by
:class:`headrace.workloads.particles.StreamingRenderer`. Any other point set (positions in a field of 3
components or in fields x, y, z, of any type; radius and colour from fields or defaults; colour by any
field: :mod:`headrace.workloads.points`) is read frame by frame, packed into those records on the host and
drawn by :class:`headrace.workloads.points.PointSetRenderer`; :func:`render_frame` and
:func:`render_streamed` pick it for a file without the ``particles`` record. Frames may be negative,
counting from the end (``-1`` is the last). Cameras as :func:`headrace.imaging.parse_camera` reads them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

import headrace
from headrace import _ext
from headrace.errors import UsageError
from headrace.imaging import camera_spec, packed_background
from headrace.workloads.particles.streaming import StreamingRenderer
from headrace.workloads.points import POINT_OPTIONS, PointSetRenderer, draws_point_set

__all__ = ["render_particles", "render_streamed", "render_frame"]


def render_particles(particles: np.ndarray, *, width: int = 1024, height: int = 768, fov: float = 45.0,
                     background: Sequence[int] = (0, 0, 0), batch: int = 1 << 20, threads: int = 0,
                     **camera: Any) -> np.ndarray:
    """(height, width, 4) uint8 RGBA of (N, 8) float32 particles drawn by the CPU reference in batches of
    ``batch``; ``camera``: ``orbit=(distance, azimuth, elevation)`` and ``target``, or ``eye``, ``target``, ``up``."""
    array = np.ascontiguousarray(particles, dtype=np.float32)
    if array.ndim != 2 or array.shape[1] != 8:
        raise UsageError(f"particles must be (N, 8) float32 (x, y, z, radius, r, g, b, a), got shape {array.shape}")
    return _ext.render_particles(array, camera_spec(width, height, fov, **camera), packed_background(background),
                                 int(batch), int(threads))


def render_streamed(source: Any, frame: int = 0, **options: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """One frame streamed from the file and drawn batch by batch (seed 000's algorithms 1 and 2): the image
    and the frame's statistics (seconds, draw seconds, per-batch draw seconds, batches, particles, stored
    bytes, segment waits). Options as for :class:`StreamingRenderer`; the camera is framed on this frame.
    A point set (:func:`draws_point_set`: no ``particles`` record, or a point option given) is drawn by
    :class:`PointSetRenderer` instead, with its options."""
    ds = source if hasattr(source, "read") else headrace.open(os.fspath(source))
    if draws_point_set(ds, options.get("field"), **{k: v for k, v in options.items() if k in POINT_OPTIONS}):
        streaming = [name for name in ("method", "batch", "segments", "field") if name in options]
        if streaming:
            raise UsageError(f"{', '.join(streaming)}: options of the streamed particles record; {ds.path} is drawn "
                             "as a point set from its fields")
        points = PointSetRenderer(ds, camera_frame=frame, **options)
        stats = points.render(frame)
        stats["describe"] = points.points.describe()
        return points.image(), stats
    renderer = StreamingRenderer(ds, camera_frame=frame, **options)  # which says if there is no such frame
    stats = renderer.render(frame)
    stats["describe"] = renderer.describe()
    return renderer.image(), stats


def render_frame(source: Any, frame: int = 0, **options: Any) -> np.ndarray:
    """The image of :func:`render_streamed`."""
    return render_streamed(source, frame, **options)[0]
