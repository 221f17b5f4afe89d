"""Sphere-glyph images of particle frames (seed ``000_…``, section 3).

    image = headrace.render.render_frame("p.hrc", 0, width=1024, height=768, camera="orbit:30,20")
    headrace.render.write_image("frame.png", image)

Every particle (x, y, z, radius, r, g, b, a; the ``particles`` field of ``headrace generate particles``)
is a ray-cast sphere with a correct depth and headlight shading. A frame travels through the engine's
queue batch by batch (``batch`` particles, whole chunks) into ``segments`` segments and each batch is
drawn once it has arrived (seed 000's algorithms 1 and 2); the image does not depend on the batching.
``device=0`` draws with the CUDA kernels, ``device="cpu"`` with the CPU reference renderer they are
checked against. ``method`` is one of seed 000's streaming methods on Linux (:data:`METHODS`).

Any other point set (positions in a field of 3 components or in fields x, y, z, of any type; radius and
colour from fields or defaults; colour by any field: :mod:`headrace.points`) is read frame by frame,
packed into those records on the host and drawn by :class:`PointSetRenderer`; :func:`render_frame` and
:func:`render_streamed` pick it for a file without the ``particles`` record. Frames may be negative,
counting from the end (``-1`` is the last).

Cameras: ``orbit:AZ,EL[,DIST]`` (degrees around the y axis and above the xz plane, around the frame's
bounding-box centre; the distance defaults to 1.3 bounding-box diagonals) or
``lookat:EX,EY,EZ:TX,TY,TZ[:UX,UY,UZ]`` (up defaults to +y).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from headrace import _ext
from headrace._files import replacing
from headrace.errors import OutOfRangeError, UnavailableError, UsageError

__all__ = ["METHODS", "GPU_METHODS", "method_codec", "StreamingRenderer", "PointSetRenderer", "draws_point_set", "frame_of",
           "render_frame", "render_streamed", "render_particles", "parse_camera", "write_image", "write_animation"]


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


# Seed 000's methods on Linux: (queue backend, queue knobs, frame resident before the clock starts).
METHODS: dict[str, tuple[str, dict[str, Any], bool]] = {
    "auto": ("auto", {}, False),                      # the engine's read path: page cache, O_DIRECT or DMA, per read
    "vram": ("posix", {}, True),                      # the static baseline: the frame already in GPU memory
    "ram": ("ram", {}, False),                        # the file in RAM, copied batch by batch
    "ram-pinned": ("mmap", {"pin_files": True}, False),  # the file page-locked in RAM, DMA'd batch by batch
    "mmap-all": ("mmap", {"mmap_mode": "whole"}, False),
    "mmap-segment": ("mmap", {"mmap_mode": "segment"}, False),
    "mmap-batch": ("mmap", {"mmap_mode": "window"}, False),
    "pread": ("posix", {}, False),                    # ReadFile's counterpart: threads of pread
    "direct": ("direct", {}, False),                  # O_DIRECT
    "uring-naive": ("uring", {"max_batch": 1}, False),  # every request submitted on its own
    "uring-batched": ("uring", {}, False),
    "cufile": ("cufile", {}, False),
    "compressed-lz4": ("uring", {}, False),           # the file's chunks decoded on the GPU (CPU for --device cpu)
    "compressed-zstd": ("uring", {}, False),
    "compressed-gdeflate": ("uring", {}, False),
    "compressed-chain": ("uring", {}, False),          # chunks of codec chains (shuffle|zstd, ...), decoded the same way
}
# The plain codecs a compressed-* method is named after; chunks of any codec chain are "chain".
PLAIN_METHOD_CODECS = ("lz4", "zstd", "gdeflate")


def method_codec(codec: str) -> str:
    """What a compressed-* method calls a chunk's codec (as the index names it): a plain codec's name, or
    ``"chain"`` for a chain of stages (docs/codecs/), which the engine decodes stage by stage."""
    return codec if codec in ("none", *PLAIN_METHOD_CODECS) else "chain"


# The methods that only a GPU can run, and why.
GPU_METHODS = {"vram": "keeps the frame in GPU memory", "ram-pinned": "copies page-locked pages to the GPU by DMA",
               "cufile": "reads into GPU memory"}


def _camera(width: int, height: int, fov: float, eye: Sequence[float] = (0, 0, 1), target: Sequence[float] = (0, 0, 0),
            up: Sequence[float] = (0, 1, 0), orbit: Sequence[float] | None = None) -> Any:
    return _ext.CameraSpec(tuple(map(float, eye)), tuple(map(float, target)), tuple(map(float, up)),
                           tuple(map(float, orbit)) if orbit is not None else None, float(fov), int(width), int(height))


def _packed(background: Sequence[int]) -> int:
    r, g, b = (int(c) for c in background)
    return r | (g << 8) | (b << 16) | (255 << 24)


def render_particles(particles: np.ndarray, *, width: int = 1024, height: int = 768, fov: float = 45.0,
                     background: Sequence[int] = (0, 0, 0), batch: int = 1 << 20, threads: int = 0,
                     **camera: Any) -> np.ndarray:
    """(height, width, 4) uint8 RGBA of (N, 8) float32 particles drawn by the CPU reference in batches of
    ``batch``; ``camera``: ``orbit=(distance, azimuth, elevation)`` and ``target``, or ``eye``, ``target``, ``up``."""
    array = np.ascontiguousarray(particles, dtype=np.float32)
    if array.ndim != 2 or array.shape[1] != 8:
        raise UsageError(f"particles must be (N, 8) float32 (x, y, z, radius, r, g, b, a), got shape {array.shape}")
    return _ext.render_particles(array, _camera(width, height, fov, **camera), _packed(background), int(batch), int(threads))


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


def frame_of(ds: Any, frame: int) -> int:
    """``frame`` as an index from 0, negative ones counting from the end (-1: the last) as
    :meth:`headrace.Dataset.read` does; OutOfRangeError (a UsageError) naming the frames there are."""
    count = len(ds.frames)
    if not -count <= frame < count:
        span = f"0 to {count - 1}, or -{count} to -1 from the end" if count else "none"
        raise OutOfRangeError(f"{ds.path}: no frame {frame} ({count} frames: {span})")
    return int(frame) % count


def _expect_frame(ds: Any, frame: int) -> None:
    """A frame index from 0 (the many-rank renderers take no negative ones)."""
    if not 0 <= frame < len(ds.frames):
        raise UsageError(f"{ds.path}: no frame {frame} ({len(ds.frames)} frames)")


class StreamingRenderer:
    """Seed 000's renderer with its pipeline set up once: the shared engine of ``method`` (``auto``, the
    default: the engine's read path) on one file and a renderer (GPU ``device``, or the CPU reference) of
    one camera; :meth:`render` streams a frame through
    it and returns the frame's statistics, :meth:`image` the last image. Options as for
    :func:`render_streamed`."""

    def __init__(self, source: Any, *, method: str = "auto", device: int | str | None = "cpu",
                 camera: str = "orbit:30,20", field: str = "particles", width: int = 1024, height: int = 768,
                 fov: float = 45.0, background: Sequence[int] = (0, 0, 0), batch: int = 1 << 20, segments: int = 4,
                 threads: int = 0, camera_frame: int = 0, **queue_knobs: Any) -> None:
        import headrace

        self.dataset = ds = source if hasattr(source, "read") else headrace.open(os.fspath(source))
        if method not in METHODS:
            raise UsageError(f"method {method!r}: expected one of {', '.join(METHODS)}")
        backend, knobs, self.preload = METHODS[method]
        self.method, self.ordinal = method, -1 if device in (None, "cpu") else int(device)
        if method.startswith("compressed-"):
            wanted = method.removeprefix("compressed-")
            held = [c for c in ds.codecs if c != "none"] or ["none"]
            if {method_codec(c) for c in held} != {wanted}:
                reads = "chunks of codec chains" if wanted == "chain" else f"{wanted} chunks"
                families = {method_codec(c) for c in held}
                hint = f" (method compressed-{families.pop()} reads it)" if len(families) == 1 and "none" not in families else ""
                raise UsageError(f"{ds.path}: method {method} reads {reads}, the file holds {', '.join(held)}{hint}")
        if method in GPU_METHODS and self.ordinal < 0:
            raise UsageError(f"method {method} {GPU_METHODS[method]}: it needs a GPU (--device 0)")
        fields = [f.name for f in ds.fields]
        if field not in fields:
            raise _ext.UnknownNameError(f"{ds.path}: no field {field!r} (fields: {', '.join(fields)})")
        self.field, self.batch, self.segments = fields.index(field), int(batch), int(segments)
        # The process's engine for this method: its queue, staging and page-locked files outlive the renderer.
        self.engine = headrace.shared_engine(None if self.ordinal < 0 else self.ordinal, backend=backend,
                                             decode_on="gpu" if self.ordinal >= 0 else "cpu", **{**knobs, **queue_knobs})
        self.queue = self.engine.queue
        self.file = self.engine.add_file(ds.path)
        camera_frame = frame_of(ds, camera_frame)
        # One camera for the series, framed on one frame's box.
        view = _camera(width, height, fov, **parse_camera(camera, view_box(ds, camera_frame, field)))
        self._renderer = _ext.FrameRenderer(view, _packed(background), self.ordinal, int(threads))

    def render(self, frame: int, *, draw: bool = True, next_frame: int | None = None) -> dict[str, Any]:
        """Streams frame ``frame`` and draws it; ``draw=False`` streams it alone (the I/O half of the overlap).
        ``next_frame``: the frame the next call renders (a series): its first batches are loaded while this
        frame is drawn, within this frame's time (``loaded_ahead`` of the next call's stats)."""
        ds = self.dataset
        frame = frame_of(ds, frame)
        if next_frame is not None:
            next_frame = frame_of(ds, next_frame)
        native_queue = self.queue._native
        if native_queue is None:  # the engine was closed (release_engines)
            raise UsageError(f"{ds.path}: the renderer's engine was released; make a new renderer")
        stats = self._renderer.render(native_queue, self.file, ds.container, int(frame), self.field, self.batch,
                                      self.segments, self.preload, draw, None if next_frame is None else int(next_frame))
        stats.update(method=self.method, device="cpu" if self.ordinal < 0 else self.ordinal)
        return stats

    def image(self) -> np.ndarray:
        return self._renderer.image()

    def describe(self) -> str:
        return self.queue.describe()


class PointSetRenderer:
    """Any point set of a file (:mod:`headrace.points`: positions of any type, radius and colour from
    fields or defaults, colour by any field) drawn as sphere glyphs: each frame's fields are read on the
    host, packed into the renderer's records and drawn by the CPU reference (``device="cpu"``) or, copied
    into GPU memory (:func:`headrace.points.upload`), by the CUDA kernels (``device=0``), which draw the
    same records into the same image. Camera and image options as for :class:`StreamingRenderer`;
    ``positions``, ``radius``, ``colour``, ``colour_by``, ``colour_map``, ``colour_range`` as for
    :class:`headrace.points.PointSet` (:attr:`points`, whose ``describe()`` says what was chosen)."""

    def __init__(self, source: Any, *, device: int | str | None = "cpu", camera: str = "orbit:30,20",
                 width: int = 1024, height: int = 768, fov: float = 45.0, background: Sequence[int] = (0, 0, 0),
                 threads: int = 0, camera_frame: int = 0, **point_options: Any) -> None:
        import headrace
        from headrace.points import PointSet

        self.dataset = ds = source if hasattr(source, "read") else headrace.open(os.fspath(source))
        self.ordinal = -1 if device in (None, "cpu") else int(device)
        self.points = PointSet(ds, camera_frame=frame_of(ds, camera_frame), **point_options)
        view = _camera(width, height, fov, **parse_camera(camera, self.points.home_box))
        self._renderer = _ext.FrameRenderer(view, _packed(background), self.ordinal, int(threads))
        look = self.points.look()
        if look:
            self._renderer.set_look(**look)
        self._renderer.clear()
        self._image = self._renderer.image()

    def render(self, frame: int) -> dict[str, Any]:
        """Reads frame ``frame`` (negative: from the end) and draws it: its statistics (seconds, read
        seconds, draw seconds, points, device)."""
        from headrace.points import StagedPoints

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


POINT_OPTIONS = ("positions", "radius", "colour", "colour_by", "colour_map", "colour_range")


def draws_point_set(ds: Any, field: str | None = None, **point_options: Any) -> bool:
    """Whether a particle file is drawn as a point set (:class:`PointSetRenderer`): a point option is given,
    or the field to draw (default ``particles``) is not the renderer's record; else it streams
    (:class:`StreamingRenderer`)."""
    from headrace.points import RECORD_FIELD, is_particle_record

    return any(point_options.get(name) is not None for name in POINT_OPTIONS) or not is_particle_record(
        ds, field or RECORD_FIELD)


def render_streamed(source: Any, frame: int = 0, **options: Any) -> tuple[np.ndarray, dict[str, Any]]:
    """One frame streamed from the file and drawn batch by batch (seed 000's algorithms 1 and 2): the image
    and the frame's statistics (seconds, draw seconds, per-batch draw seconds, batches, particles, stored
    bytes, segment waits). Options as for :class:`StreamingRenderer`; the camera is framed on this frame.
    A point set (:func:`draws_point_set`: no ``particles`` record, or a point option given) is drawn by
    :class:`PointSetRenderer` instead, with its options."""
    import headrace

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


def write_image(path: os.PathLike | str, image: np.ndarray) -> None:
    """A PNG (or any format Pillow knows by the suffix), through a temporary file and rename."""
    from PIL import Image

    target = Path(path)
    with replacing(target) as partial:
        Image.fromarray(image, "RGBA").save(partial, format=_format_of(target))


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
            from PIL import Image

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
