"""Pathlines drawn over a rendered image (issue 40's viewer): each path from its release up to a time, as
lines in the colour of the flow's speed, its particle there a dot. ``headrace view SERIES --pathlines
PATHS.npz`` draws them over every frame it plays, at that frame's time, so the paths grow as the series plays.

    overlay = PathOverlay.of(trace_pathlines("gyre.hrc", seeds, step_size=0.05, device=0))
    image = overlay.draw(image, camera, time=1.5)  # camera: the OrbitCamera the image was rendered from

Points project as the renderers' pinhole camera does (``Camera::project``, camera.hpp), so a path passes
through the spheres or the volume it was traced in. Lines lie over the image (no depth test): they are what
the eye follows. Drawn on the host, a few million pixels a frame: thousands of paths, not millions.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from headrace.errors import UsageError
from headrace.imaging import COLOUR_TABLE_ENTRIES, OrbitCamera, colour_table

__all__ = ["PathOverlay"]

# The arrays a pathlines .npz must hold (write_pathlines writes them).
NPZ_ARRAYS = ("points", "offsets", "Time", "Speed")
HEAD_RADIUS = 1  # a particle's dot: (2 r + 1) pixels a side


@dataclass(frozen=True)
class PathOverlay:
    """Paths ``points[offsets[i]:offsets[i + 1]]`` with each point's time and speed, coloured through
    ``colours`` ((256, 4) RGBA in [0, 1]) over ``speed_range``; immutable, so sessions share one."""

    points: np.ndarray  # (N, 3) float64
    offsets: np.ndarray  # (paths + 1,) int64
    times: np.ndarray  # (N,) float64
    speeds: np.ndarray  # (N,) float32
    speed_range: tuple[float, float]
    colours: np.ndarray
    forward: bool

    @classmethod
    def of(cls, result: Any, colour_map: str = "plasma") -> PathOverlay:
        """The paths of a :class:`PathlineResult` (or streaklines' particles)."""
        velocities = np.asarray(result.velocities, dtype=np.float64)
        return cls.from_arrays(result.points, result.offsets, result.times, np.sqrt((velocities ** 2).sum(axis=1)),
                               colour_map)

    @classmethod
    def load(cls, path: os.PathLike | str, colour_map: str = "plasma") -> PathOverlay:
        """The paths of an ``.npz`` that ``headrace trace --pathlines`` (or :func:`write_pathlines`) wrote; a
        UsageError naming the file and what it lacks otherwise."""
        name = os.fspath(path)
        if not name.lower().endswith(".npz"):
            raise UsageError(f"{name}: the viewer draws pathlines from the .npz that `headrace trace SERIES --pathlines "
                             f"--out PATHS.npz` writes, not {os.path.splitext(name)[1] or 'a file without an extension'}")
        try:
            with np.load(name, allow_pickle=False) as arrays:
                missing = [key for key in NPZ_ARRAYS if key not in arrays.files]
                if missing:
                    raise UsageError(f"{name}: expected pathlines with arrays {', '.join(NPZ_ARRAYS)}; it lacks "
                                     f"{', '.join(missing)} (streamlines have no Time: trace with --pathlines)")
                loaded = {key: arrays[key] for key in NPZ_ARRAYS}
        except (OSError, ValueError) as why:  # not a zip, a truncated one
            raise UsageError(f"{name}: not a readable .npz of pathlines: {why}") from None
        return cls.from_arrays(loaded["points"], loaded["offsets"], loaded["Time"], loaded["Speed"], colour_map)

    @classmethod
    def from_arrays(cls, points: Any, offsets: Any, times: Any, speeds: Any, colour_map: str = "plasma") -> PathOverlay:
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        offsets, times = np.asarray(offsets, dtype=np.int64), np.asarray(times, dtype=np.float64)
        speeds = np.asarray(speeds, dtype=np.float32)
        if len(offsets) == 0 or offsets[0] != 0 or offsets[-1] != len(points) or np.any(np.diff(offsets) < 0):
            raise UsageError(f"pathlines: offsets must rise from 0 to the {len(points)} points, got {len(offsets)} offsets")
        if len(times) != len(points) or len(speeds) != len(points):
            raise UsageError(f"pathlines: {len(points)} points, {len(times)} times and {len(speeds)} speeds")
        first = times[offsets[:-1][np.diff(offsets) > 1]]
        second = times[offsets[:-1][np.diff(offsets) > 1] + 1]
        forward = bool(np.all(second >= first))  # every path runs one way in time
        finite = speeds[np.isfinite(speeds)]
        high = float(np.percentile(finite, 99)) if len(finite) else 1.0
        return cls(points, offsets, times, speeds, (0.0, high if high > 0 else 1.0), colour_table(colour_map), forward)

    @property
    def count(self) -> int:
        return len(self.offsets) - 1

    def projected(self, camera: OrbitCamera, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
        """Every point's pixel position (x right, y down, fractional) and whether it lies in front of the eye."""
        forward, right, up = camera.axes()
        half = math.tan(math.radians(camera.fov) / 2)
        d = self.points - camera.eye()
        depth = d @ forward
        ahead = depth > 0
        depth = np.where(ahead, depth, 1.0)
        sx = (d @ right) / (half * width / height * depth)
        sy = (d @ up) / (half * depth)
        return np.stack([(sx + 1) * 0.5 * width, (1 - sy) * 0.5 * height], axis=1), ahead

    def draw(self, image: np.ndarray, camera: OrbitCamera, time: float) -> np.ndarray:
        """A copy of ``image`` ((H, W, 4) uint8) with every path drawn from its release up to ``time`` (its
        last segment cut at ``time``), its particle at ``time`` a dot; paths released later are not drawn."""
        height, width = image.shape[:2]
        out = np.array(image, copy=True)
        pixel, ahead = self.projected(camera, width, height)
        reached = self.times <= time if self.forward else self.times >= time
        last = np.zeros(len(self.points), dtype=bool)
        last[self.offsets[1:][np.diff(self.offsets) > 0] - 1] = True
        # Segment k joins point k to k + 1 of one path: whole where both are reached, cut at `time` where only
        # the first is (its cut end the particle then).
        starts = np.flatnonzero(~last & reached & ahead)
        starts = starts[ahead[starts + 1]]
        ends = starts + 1
        whole = reached[ends]
        a, b = pixel[starts], pixel[ends]
        span = self.times[ends] - self.times[starts]
        cut = np.where(whole | (span == 0), 1.0, (time - self.times[starts]) / np.where(span == 0, 1.0, span))
        b = a + (b - a) * cut[:, None]
        speed = self.speeds[starts] + (self.speeds[ends] - self.speeds[starts]) * cut.astype(np.float32)
        self._lines(out, a, b, self._rgba(self.speeds[starts]), self._rgba(speed))
        # The particles at `time`: the cut ends, and the last points of paths that end at `time` exactly.
        ending = np.flatnonzero(last & (self.times == time) & ahead)
        self._dots(out, np.concatenate([b[~whole], pixel[ending]]),
                   self._rgba(np.concatenate([speed[~whole], self.speeds[ending]])))
        return out

    def _rgba(self, speeds: np.ndarray) -> np.ndarray:
        lo, hi = self.speed_range
        index = np.clip((speeds - lo) / (hi - lo) * (COLOUR_TABLE_ENTRIES - 1), 0, COLOUR_TABLE_ENTRIES - 1)
        return np.round(self.colours[np.nan_to_num(index).astype(np.int64)] * 255).astype(np.uint8)

    @staticmethod
    def _lines(out: np.ndarray, a: np.ndarray, b: np.ndarray, colour_a: np.ndarray, colour_b: np.ndarray) -> None:
        """Segments a -> b, a pixel a step along the longer axis, coloured from colour_a to colour_b."""
        height, width = out.shape[:2]
        if len(a) == 0:
            return
        steps = np.ceil(np.abs(b - a).max(axis=1)).astype(np.int64) + 1
        steps = np.minimum(steps, 4 * (width + height))  # a segment through the eye's plane: no farther than the image
        segment = np.repeat(np.arange(len(a)), steps)
        along = (np.arange(len(segment)) - np.repeat(np.cumsum(steps) - steps, steps)) / np.repeat(np.maximum(steps - 1, 1), steps)
        xy = a[segment] + (b - a)[segment] * along[:, None]
        x, y = np.floor(xy[:, 0]).astype(np.int64), np.floor(xy[:, 1]).astype(np.int64)
        inside = (x >= 0) & (x < width) & (y >= 0) & (y < height)
        mix = along[:, None][inside]
        colour = colour_a[segment[inside]] * (1 - mix) + colour_b[segment[inside]] * mix
        out[y[inside], x[inside], :3] = np.round(colour[:, :3]).astype(np.uint8)
        out[y[inside], x[inside], 3] = 255

    @staticmethod
    def _dots(out: np.ndarray, centres: np.ndarray, colours: np.ndarray) -> None:
        height, width = out.shape[:2]
        for dy in range(-HEAD_RADIUS, HEAD_RADIUS + 1):
            for dx in range(-HEAD_RADIUS, HEAD_RADIUS + 1):
                x = np.floor(centres[:, 0]).astype(np.int64) + dx
                y = np.floor(centres[:, 1]).astype(np.int64) + dy
                inside = (x >= 0) & (x < width) & (y >= 0) & (y < height)
                out[y[inside], x[inside], :3] = colours[inside, :3]
                out[y[inside], x[inside], 3] = 255
