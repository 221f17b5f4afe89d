"""Sphere-glyph images of particle frames (seed ``000_…``, section 3).

    image = headrace.render.render_frame("p.hrc", 0, width=1024, height=768, camera="orbit:30,20")
    headrace.render.write_image("frame.png", image)

Every particle (x, y, z, radius, r, g, b, a; the ``particles`` field of ``headrace generate particles``)
is a ray-cast sphere with a correct depth and headlight shading. The frame is drawn batch by batch
(``batch`` particles at a time, as the streaming methods deliver them); the image does not depend on
the batching. This module draws with the CPU reference renderer, the one the GPU renderer is checked
against.

Cameras: ``orbit:AZ,EL[,DIST]`` (degrees around the y axis and above the xz plane, around the frame's
bounding-box centre; the distance defaults to 1.3 bounding-box diagonals) or
``lookat:EX,EY,EZ:TX,TY,TZ[:UX,UY,UZ]`` (up defaults to +y).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from headrace import _ext
from headrace.errors import UnavailableError, UsageError

__all__ = ["render_frame", "render_particles", "parse_camera", "write_image", "write_animation"]


def parse_camera(spec: str, bbox: Sequence[Sequence[float]]) -> dict[str, Any]:
    """Keyword arguments of :func:`render_particles` for a camera spec over a bounding box."""
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


def render_particles(particles: np.ndarray, *, width: int = 1024, height: int = 768, eye: Sequence[float] = (0, 0, 1),
                     target: Sequence[float] = (0, 0, 0), up: Sequence[float] = (0, 1, 0),
                     orbit: Sequence[float] | None = None, fov: float = 45.0,
                     background: Sequence[int] = (0, 0, 0), batch: int = 1 << 20, threads: int = 0) -> np.ndarray:
    """(height, width, 4) uint8 RGBA of (N, 8) float32 particles, drawn in batches of ``batch``."""
    array = np.ascontiguousarray(particles, dtype=np.float32)
    if array.ndim != 2 or array.shape[1] != 8:
        raise UsageError(f"particles must be (N, 8) float32 (x, y, z, radius, r, g, b, a), got shape {array.shape}")
    r, g, b = (int(c) for c in background)
    packed = r | (g << 8) | (b << 16) | (255 << 24)
    return _ext.render_particles(array, tuple(map(float, eye)), tuple(map(float, target)), tuple(map(float, up)),
                                 float(fov), int(width), int(height), packed, int(batch), int(threads),
                                 tuple(map(float, orbit)) if orbit is not None else None)


def render_frame(source: Any, frame: int = 0, *, camera: str = "orbit:30,20", field: str = "particles",
                 **options: Any) -> np.ndarray:
    """One frame of a particle container, drawn as sphere glyphs; ``options`` as for :func:`render_particles`."""
    import headrace

    ds = source if hasattr(source, "read") else headrace.open(os.fspath(source))
    if not 0 <= frame < len(ds.frames):
        raise UsageError(f"{ds.path}: no frame {frame} ({len(ds.frames)} frames)")
    particles = ds.read(frame, field)
    return render_particles(particles, **parse_camera(camera, ds.frames[frame].bbox), **options)


def write_image(path: os.PathLike | str, image: np.ndarray) -> None:
    """A PNG (or any format Pillow knows by the suffix), through a temporary file and rename."""
    from PIL import Image

    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    try:
        Image.fromarray(image, "RGBA").save(partial, format=_format_of(target))
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def write_animation(path: os.PathLike | str, images: Sequence[np.ndarray], fps: float = 10.0) -> None:
    """An animated GIF or WebP (Pillow), or an MP4 when imageio with ffmpeg is installed; through a
    temporary file and rename."""
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    suffix = target.suffix.lower()
    try:
        if suffix == ".mp4":
            try:
                import imageio.v3 as iio
            except ImportError:
                raise UnavailableError(f"{target}: no MP4 encoder (pip install imageio imageio-ffmpeg); "
                                       "write a .gif or .webp instead") from None
            iio.imwrite(partial, np.stack([i[..., :3] for i in images]), extension=".mp4", fps=fps)
        elif suffix in (".gif", ".webp"):
            from PIL import Image

            frames = [Image.fromarray(i, "RGBA") for i in images]
            frames[0].save(partial, format=_format_of(target), save_all=True, append_images=frames[1:],
                           duration=int(math.ceil(1000 / fps)), loop=0)
        else:
            raise UsageError(f"{target}: expected an animation ending in .mp4, .gif or .webp")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def _format_of(path: Path) -> str:
    formats = {".png": "PNG", ".webp": "WEBP", ".gif": "GIF", ".tif": "TIFF", ".tiff": "TIFF"}
    try:
        return formats[path.suffix.lower()]
    except KeyError:
        raise UsageError(f"{path}: expected an image ending in {', '.join(formats)}") from None
