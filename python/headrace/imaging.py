"""What every renderer shares: frames by number, cameras, backgrounds, colour maps, value ranges from the
index, and writing images and animations.

    view = camera_spec(1024, 768, **parse_camera("orbit:30,20", view_box(ds, 0, "particles")))
    write_image("frame.png", image)

Cameras: ``orbit:AZ,EL[,DIST]`` (degrees around the y axis and above the xz plane, around a bounding box's
centre; the distance defaults to 1.3 bounding-box diagonals) or ``lookat:EX,EY,EZ:TX,TY,TZ[:UX,UY,UZ]``
(up defaults to +y); :class:`OrbitCamera` is the orbit the viewer's mouse turns, moves and zooms.
A renderer's background is one opaque RGBA8 number (:func:`packed_background`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from headrace import _ext
from headrace._files import replacing
from headrace.errors import OutOfRangeError, UnavailableError, UsageError

__all__ = ["frame_of", "expect_frame", "device_address", "parse_camera", "camera_spec", "view_box", "OrbitCamera", "packed_background",
           "COLOUR_MAPS", "COLOUR_TABLE_ENTRIES", "colour_table", "chunk_bounds", "recorded_range", "widened_range", "value_range",
           "load_encoders", "write_image", "ImageWriter", "write_animation"]

# Degrees an orbit turns per pixel dragged: a drag across a 1000-pixel view turns it 250 degrees.
DEGREES_PER_PIXEL = 0.25
# The colour maps the viewer's page offers (any matplotlib map elsewhere).
COLOUR_MAPS = ("viridis", "magma", "inferno", "plasma", "cividis", "turbo", "coolwarm", "gray")
COLOUR_TABLE_ENTRIES = 256


def frame_of(ds: Any, frame: int) -> int:
    """``frame`` as an index from 0, negative ones counting from the end (-1: the last) as
    :meth:`headrace.Dataset.read` does; OutOfRangeError (a UsageError) naming the frames there are."""
    count = len(ds.frames)
    if not -count <= frame < count:
        span = f"0 to {count - 1}, or -{count} to -1 from the end" if count else "none"
        raise OutOfRangeError(f"{ds.path}: no frame {frame} ({count} frames: {span})")
    return int(frame) % count


def expect_frame(ds: Any, frame: int) -> None:
    """A UsageError unless ``frame`` is an index from 0 (the many-rank renderers take no negative ones)."""
    if not 0 <= frame < len(ds.frames):
        raise UsageError(f"{ds.path}: no frame {frame} ({len(ds.frames)} frames)")


def device_address(array: Any) -> int:
    """Where a frame's field lies in GPU memory (a :class:`headrace.stream.FieldArray` there): what a
    renderer's device draw takes."""
    return int(array.__cuda_array_interface__["data"][0])


def parse_camera(spec: str, bbox: Sequence[Sequence[float]]) -> dict[str, Any]:
    """Keyword arguments of :func:`camera_spec` (and of the particle renderers) for a camera spec over a
    bounding box."""
    lo, hi = np.asarray(bbox[0], dtype=np.float64), np.asarray(bbox[1], dtype=np.float64)
    centre = (lo + hi) / 2
    kind, _, rest = spec.partition(":")
    try:
        if kind == "orbit":
            values = [float(v) for v in rest.split(",")] if rest else [30.0, 20.0]
            if len(values) not in (2, 3):
                raise ValueError
            distance = values[2] if len(values) == 3 else 1.3 * float(np.linalg.norm(hi - lo)) or 1.0
            return dict(target=tuple(centre), orbit=(distance, values[0], values[1]))
        if kind == "lookat":
            parts = [[float(v) for v in part.split(",")] for part in rest.split(":")]
            if len(parts) not in (2, 3) or any(len(p) != 3 for p in parts):
                raise ValueError
            return dict(eye=tuple(parts[0]), target=tuple(parts[1]), up=tuple(parts[2]) if len(parts) == 3 else (0, 1, 0))
    except ValueError:
        pass
    raise UsageError(f"camera {spec!r}: expected orbit:AZ,EL[,DIST] or lookat:EX,EY,EZ:TX,TY,TZ[:UX,UY,UZ]")


def camera_spec(width: int, height: int, fov: float = 45.0, eye: Sequence[float] = (0, 0, 1),
                target: Sequence[float] = (0, 0, 0), up: Sequence[float] = (0, 1, 0),
                orbit: Sequence[float] | None = None) -> Any:
    """The renderers' camera (``_ext.CameraSpec``) of an image of width x height and a vertical field of
    view of ``fov`` degrees: ``orbit=(distance, azimuth, elevation)`` around ``target``, or ``eye``,
    ``target`` and ``up``."""
    return _ext.CameraSpec(tuple(map(float, eye)), tuple(map(float, target)), tuple(map(float, up)),
                           tuple(map(float, orbit)) if orbit is not None else None, float(fov), int(width), int(height))


def view_box(ds: Any, frame: int, field: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The box a camera frames: the frame's bounding box when the file records one, else the positions'
    range (the chunks' x, y, z minima and maxima) in that frame, else over every frame (an empty frame
    of a series), else the unit box (no particles anywhere)."""
    box = np.asarray(ds.frames[frame].bbox, dtype=np.float64)
    if np.isfinite(box).all():
        return tuple(box[0]), tuple(box[1])
    container = ds.container
    table = container.chunk_table()
    chunks = np.flatnonzero(table["field"] == container.field_index(field))
    for picked in (chunks[table["frame"][chunks] == frame], chunks):
        if picked.size:
            ranges = [container.chunk_range(int(k)) for k in picked]
            lo = np.min([r[0][:3] for r in ranges], axis=0)
            hi = np.max([r[1][:3] for r in ranges], axis=0)
            return tuple(lo), tuple(hi)
    return (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)


@dataclass(frozen=True)
class OrbitCamera:
    """Looks at ``target`` from ``distance`` away, ``azimuth`` degrees around the y axis and ``elevation``
    degrees above the xz plane (the camera spec ``orbit:AZ,EL,DIST``), with a vertical field of view of
    ``fov`` degrees."""

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
        _, right, up = self.axes()
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
        """The renderers' camera (:func:`camera_spec`) for an image of width x height."""
        return camera_spec(width, height, self.fov, target=self.target, orbit=(self.distance, self.azimuth, self.elevation))


def packed_background(rgb: Sequence[int]) -> int:
    """An (R, G, B) colour of 0..255 each as the renderers' opaque RGBA8 background (R in the low byte)."""
    r, g, b = (int(c) for c in rgb)
    return r | (g << 8) | (b << 16) | (255 << 24)


def colour_table(name: str, offered: Sequence[str] | None = None) -> np.ndarray:
    """(256, 4) float32 RGBA of a matplotlib colour map; UsageError naming the maps to choose from (those
    ``offered``, when given: :data:`COLOUR_MAPS` for the viewer's page)."""
    if offered is not None and name not in offered:
        raise UsageError(f"colour map {name!r}: expected one of {', '.join(offered)}")
    import matplotlib  # heavy, and needed only by a colour map

    try:
        cmap = matplotlib.colormaps[name]
    except KeyError:
        raise UsageError(f"colour map {name!r}: expected a matplotlib colour map such as viridis, magma, "
                         "inferno, plasma, cividis, coolwarm, gray") from None
    return np.asarray(cmap(np.linspace(0.0, 1.0, COLOUR_TABLE_ENTRIES)), dtype=np.float32)


def chunk_bounds(ds: Any, field: str, components: Sequence[int],
                 frames: Iterable[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each chunk's minima and maxima of ``components`` of ``field`` over ``frames`` (every frame by
    default), as the index's chunk ranges record them (nothing read): two (chunks, components) float64
    arrays, of the chunks whose picked bounds are all finite."""
    container = ds.container
    table = container.chunk_table()
    picked = np.flatnonzero(table["field"] == container.field_index(field))
    if frames is not None:
        picked = picked[np.isin(table["frame"][picked], np.fromiter(frames, dtype=np.int64))]
    wanted = list(components)
    bounds = np.array([[np.asarray(bound, dtype=np.float64)[wanted] for bound in container.chunk_range(int(k))]
                       for k in picked], dtype=np.float64).reshape(-1, 2, len(wanted))
    finite = bounds[np.isfinite(bounds).all(axis=(1, 2))]
    return finite[:, 0], finite[:, 1]


def recorded_range(ds: Any, field: str, component: int = 0,
                   frames: Iterable[int] | None = None) -> tuple[float, float] | None:
    """A component's (min, max) over ``frames`` (every frame by default) as the index's chunk ranges record
    it, nothing read; ``None`` when no chunk records a finite range."""
    lows, highs = chunk_bounds(ds, field, [component], frames)
    if not len(lows):
        return None
    return float(lows.min()), float(highs.max())


def value_range(ds: Any, field: str, component: int = 0, frames: Iterable[int] | None = None) -> tuple[float, float]:
    """The range to map a component's colours over: its :func:`recorded_range`, one wide from the minimum
    where every value is the same, (0, 1) where no chunk records one."""
    return widened_range(recorded_range(ds, field, component, frames))


def widened_range(recorded: tuple[float, float] | None) -> tuple[float, float]:
    """A :func:`recorded_range` as a range to map colours over: one wide from the minimum where every value
    is the same, (0, 1) where nothing is recorded."""
    if recorded is None:
        return 0.0, 1.0
    lo, hi = recorded
    return (lo, hi) if hi > lo else (lo, lo + 1.0)


def load_encoders() -> None:
    """Loads Pillow and its file formats' encoders, which its first save otherwise imports (25 ms on the CPU
    machine, the interpreter's lock held): a command calls it on a thread while its GPU's context is made, so
    that neither its first frame nor the first image's write pays it."""
    from PIL import Image  # Pillow loads only where an image is written

    Image.preinit()


def write_image(path: os.PathLike | str, image: np.ndarray) -> None:
    """A PNG (or any format Pillow knows by the suffix), through a temporary file and rename. PNGs at zlib's
    level 1: a rendered 1024 x 768 frame in 64 ms where the default level took 104, for 7 % more bytes."""
    from PIL import Image  # Pillow loads only where an image is written

    target = Path(path)
    image_format = _format_of(target)
    with replacing(target) as partial:
        Image.fromarray(image, "RGBA").save(partial, format=image_format, **({"compress_level": 1} if image_format == "PNG" else {}))


def writer_threads() -> int:
    """How many threads an :class:`ImageWriter` writes with unless told: half the cores, at most 8."""
    return max(1, min(8, (os.cpu_count() or 2) // 2))


def writer_pending(threads: int = 0) -> int:
    """How many images an :class:`ImageWriter` of ``threads`` (its default unless told) holds at most unless told:
    two a thread."""
    return 2 * (threads or writer_threads())


class ImageWriter:
    """Images of a series written by a few threads while the next frames are drawn (Pillow's encoders
    release the GIL), each as :func:`write_image` writes it. At most ``pending`` wait at once (a write
    waits for the oldest first); a failed write raises from the next :meth:`write` or from :meth:`close`,
    which waits for all. A context manager: leaving it closes, and on an error waits without raising."""

    def __init__(self, threads: int = 0, pending: int = 0) -> None:
        from concurrent.futures import Future, ThreadPoolExecutor

        # Pillow loaded before the first frame, not by the first write on a thread while the second is drawn.
        load_encoders()
        self.threads = threads or writer_threads()
        self.pending = pending or writer_pending(self.threads)
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="headrace-images")
        self._writes: list[Future[None]] = []

    def write(self, path: os.PathLike | str, image: np.ndarray) -> None:
        while len(self._writes) >= self.pending:
            self._writes.pop(0).result()
        self._writes.append(self._pool.submit(write_image, path, image))

    def close(self) -> None:
        try:
            while self._writes:
                self._writes.pop(0).result()
        finally:
            self._pool.shutdown(wait=True)

    def __enter__(self) -> ImageWriter:
        return self

    def __exit__(self, kind: Any, *_: Any) -> None:
        if kind is None:
            self.close()
            return
        for write in self._writes:  # the error on its way out wins; the images begun are finished
            write.exception()
        self._pool.shutdown(wait=True)


def write_animation(path: os.PathLike | str, images: Sequence[np.ndarray], fps: float = 10.0) -> None:
    """An animated GIF or WebP (Pillow), or an MP4 when imageio with ffmpeg is installed; through a
    temporary file and rename."""
    target = Path(path)
    suffix = target.suffix.lower()
    with replacing(target) as partial:
        if suffix == ".mp4":
            try:
                import imageio.v3 as iio  # type: ignore[import]  # optional (MP4 only)
            except ImportError:
                raise UnavailableError(f"{target}: no MP4 encoder (pip install imageio imageio-ffmpeg); "
                                       "write a .gif or .webp instead") from None
            # ffmpeg picks the container by the name's ending: write <name>.partial.mp4, then move it
            # to the partial name that replacing() renames.
            staged = f"{partial}.mp4"
            try:
                iio.imwrite(staged, np.stack([i[..., :3] for i in images]), fps=fps)
                os.replace(staged, partial)
            finally:
                if os.path.exists(staged):
                    os.unlink(staged)
        elif suffix in (".gif", ".webp"):
            from PIL import Image  # Pillow loads only where an image is written

            frames = [Image.fromarray(i, "RGBA") for i in images]
            frames[0].save(partial, format=_format_of(target), save_all=True, append_images=frames[1:],
                           duration=int(math.ceil(1000 / fps)), loop=0)
        else:
            raise UsageError(f"{target}: expected an animation ending in .mp4, .gif or .webp")


def _format_of(path: Path) -> str:
    formats = {".png": "PNG", ".webp": "WEBP", ".gif": "GIF", ".tif": "TIFF", ".tiff": "TIFF"}
    try:
        return formats[path.suffix.lower()]
    except KeyError:
        raise UsageError(f"{path}: expected an image ending in {', '.join(formats)}") from None
