"""The viewer's camera: an orbit around a target that the mouse turns, moves and zooms."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

__all__ = ["OrbitCamera"]

# Degrees the camera turns per pixel dragged: a drag across a 1000-pixel view turns it 250 degrees.
DEGREES_PER_PIXEL = 0.25


@dataclass(frozen=True)
class OrbitCamera:
    """Looks at ``target`` from ``distance`` away, ``azimuth`` degrees around the y axis and ``elevation``
    degrees above the xz plane (``headrace render``'s ``orbit:AZ,EL,DIST``), with a vertical field of view
    of ``fov`` degrees."""

    target: tuple[float, float, float]
    distance: float
    azimuth: float = 30.0
    elevation: float = 20.0
    fov: float = 45.0

    @classmethod
    def framing(cls, box: tuple[Any, Any], azimuth: float = 30.0, elevation: float = 20.0) -> OrbitCamera:
        """The camera ``headrace render`` starts from: around the box's centre, 1.3 diagonals away."""
        lo, hi = np.asarray(box[0], dtype=np.float64), np.asarray(box[1], dtype=np.float64)
        centre = (lo + hi) / 2
        distance = 1.3 * float(np.linalg.norm(hi - lo)) or 1.0
        return cls(tuple(float(c) for c in centre), distance, azimuth, elevation)  # type: ignore[arg-type]

    def orbited(self, dx: float, dy: float) -> OrbitCamera:
        """Turned by a drag of (dx, dy) pixels: right turns the scene right, down tilts it towards the viewer."""
        elevation = min(89.0, max(-89.0, self.elevation + DEGREES_PER_PIXEL * dy))
        return replace(self, azimuth=(self.azimuth - DEGREES_PER_PIXEL * dx) % 360.0, elevation=elevation)

    def panned(self, dx: float, dy: float, height: int) -> OrbitCamera:
        """Moved in the view plane so that the point under the cursor follows a drag of (dx, dy) pixels."""
        forward, right, up = self.axes()
        del forward
        scale = 2.0 * self.distance * math.tan(math.radians(self.fov) / 2) / max(height, 1)
        target = np.asarray(self.target) - right * (dx * scale) + up * (dy * scale)
        return replace(self, target=tuple(float(c) for c in target))  # type: ignore[arg-type]

    def zoomed(self, factor: float) -> OrbitCamera:
        """``factor`` times as far from the target (> 1 moves away)."""
        if not (math.isfinite(factor) and factor > 0):
            raise ValueError(f"a zoom factor must be positive and finite, got {factor}")
        return replace(self, distance=self.distance * factor)

    def eye(self) -> np.ndarray:
        az, el = math.radians(self.azimuth), math.radians(self.elevation)
        offset = np.array([math.cos(el) * math.sin(az), math.sin(el), math.cos(el) * math.cos(az)]) * self.distance
        return np.asarray(self.target) + offset

    def axes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Unit forward, right and up vectors (as the renderers' look-at builds them, up from +y)."""
        forward = np.asarray(self.target) - self.eye()
        forward /= np.linalg.norm(forward)
        right = np.cross(forward, [0.0, 1.0, 0.0])
        right /= np.linalg.norm(right)
        return forward, right, np.cross(right, forward)

    def spec(self, width: int, height: int) -> Any:
        """The renderers' camera (``headrace._ext.CameraSpec``) for an image of width x height."""
        from headrace.render import _camera

        return _camera(width, height, self.fov, target=self.target, orbit=(self.distance, self.azimuth, self.elevation))
