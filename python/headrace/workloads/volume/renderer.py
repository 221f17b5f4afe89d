"""Time-varying volumes and AMR, streamed and rendered (seed ``003_…``).

    renderer = headrace.workloads.volume.VolumeRenderer("amr.hrc", device=0, tf="viridis")
    image = renderer.render(0)                                   # (height, width, 4) uint8
    run = renderer.play(range(0, 20), stages="all")              # per-frame spans, frames per second

A volume is a float32 field of a container whose attributes describe a grid (``layout`` ``linear``) or
block-structured AMR (``layout`` ``amr``, :mod:`headrace.amr`). Its topology is read once; each frame's
scalars stream in brick order straight into GPU memory. The renderer ray-marches regions of the domain
(empty-space skipping and adaptive sampling by region, refit per frame from the regions' value ranges) with
the tent-basis reconstruction that blends across level boundaries; ``mode="iso"`` draws the first
iso-surface. ``device="cpu"`` renders with the CPU reference, the same math as the GPU kernels.

The transfer function is fixed across frames: a colour map over the field's value range over *every*
frame (from the index's chunk ranges, no data read) unless ``value_range`` is given, and an opacity ramp
(``opacity="ramp:A,B,MAX"``: 0 below fraction A of the range, rising to MAX at fraction B and above),
stated per half level-0 cell of ray and corrected for each region's step.

``mode="iso"`` with an iso value outside the field's values over every frame (the index's chunk ranges)
draws no surface: the renderer says so with an :class:`IsoOutsideRangeWarning` (``warnings.warn``, once
when it is made; ``warnings.catch_warnings`` or ``-W error::headrace.workloads.volume.IsoOutsideRangeWarning``
catch it) and keeps the sentence in :attr:`VolumeRenderer.iso_warning`.

:meth:`VolumeRenderer.play` runs seed 003's animation loop with its streaming steps switched on one by one
(:data:`STAGES`); its result is a run of the timeline record that :mod:`headrace.timeline` draws.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

import headrace
from headrace import _ext
from headrace.amr import topology_of
from headrace.errors import UsageError
from headrace.imaging import camera_spec, packed_background, parse_camera, recorded_range, widened_range
from headrace.workloads.volume.transfer import transfer_function

__all__ = ["STAGES", "STAGE_STEPS", "MODES", "IsoOutsideRangeWarning", "VolumeRenderer", "is_volume", "default_field"]

# Seed 003's steps, cumulative (docs/volume.md): each stage adds its step to those before it.
STAGES = ("baseline", "double", "pinned", "direct", "flat", "refit", "overlap", "all")
STAGE_STEPS = {
    "baseline": "synchronous: buffered read, CPU flatten, pageable copy, rebuild of the region lists",
    "double": "the next frame read while this one is processed (section 5.2)",
    "pinned": "page-locked upload buffer (5.3)",
    "direct": "O_DIRECT reads (5.4)",
    "flat": "scalars pre-flattened on disk: no CPU pass (5.5)",
    "refit": "region lists kept, only the classification redone (5.6)",
    "overlap": "the next frame's copy beside this frame's rendering (5.7)",
    "all": "the engine streams frames ahead into GPU slots (page cache or O_DIRECT per range, GPU decompression); "
           "value ranges overlapped too",
}
MODES = ("dvr", "iso")


def is_volume(ds: Any) -> bool:
    """Whether a dataset's attributes describe a grid or AMR that the volume renderer draws."""
    attributes = ds.container.attributes
    return attributes.get("layout") == "amr" or ("grid_dims" in attributes and attributes.get("layout", "linear") == "linear")


class IsoOutsideRangeWarning(UserWarning):
    """An iso value outside every value the field holds (``mode="iso"``): the images show no surface."""


class VolumeRenderer:
    """One volume field of a container, its topology set up once, and a renderer (GPU ``device`` or the CPU
    reference) with one camera and transfer function for every frame. Options: ``field`` (the only float32
    field when there is one), ``mode`` (:data:`MODES`), ``tf`` (a matplotlib colour map), ``opacity``,
    ``value_range`` (default: the field's over every frame), ``iso`` (default: mid-range), ``sampling``
    (samples per finest cell of a region: 2 doubles them), ``footprint`` (> 0: steps no shorter than that
    many pixel footprints at the sample's distance; 0, the default: the regions' steps alone), ``width``, ``height``, ``fov``, ``camera``
    (``orbit:AZ,EL[,DIST]`` around the domain or ``lookat:...``), ``background`` (R, G, B), ``threads`` (CPU), ``skip_empty`` (False draws every region that has cells: what
    empty-space skipping saves).

    ``mode="iso"`` with ``iso`` outside the field's values over every frame (the index's chunk ranges) warns
    with :class:`IsoOutsideRangeWarning`; :attr:`iso_warning` keeps its sentence (``None`` otherwise)."""

    def __init__(self, source: Any, *, field: str | None = None, device: int | str | None = "cpu", mode: str = "dvr",
                 tf: str = "viridis", opacity: str = "ramp:0.1,1,0.2", value_range: tuple[float, float] | None = None,
                 iso: float | None = None, sampling: float = 1.0, width: int = 1024, height: int = 768, fov: float = 45.0,
                 camera: str = "orbit:30,20", background: Sequence[int] = (0, 0, 0), threads: int = 0,
                 skip_empty: bool = True, footprint: float = 0.0) -> None:
        self.dataset = ds = source if hasattr(source, "read") else headrace.open(os.fspath(source))
        if mode not in MODES:
            raise UsageError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
        self.field = field if field is not None else default_field(ds)
        self.ordinal = -1 if device in (None, "cpu") else int(device)
        self._native = _ext.VolumeRenderer(ds.container, ds.container.field_index(self.field), self.ordinal, int(threads))
        recorded = recorded_range(ds, self.field)  # the index's chunk ranges, scanned once
        lo, hi = value_range if value_range is not None else widened_range(recorded)
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise UsageError(f"value range {lo}..{hi}: expected two finite numbers, the first below the second")
        self.value_range = (float(lo), float(hi))
        self.mode = mode
        self.iso = float(iso) if iso is not None else (lo + hi) / 2
        self.iso_warning = _iso_outside(ds, self.field, self.iso, recorded) if mode == "iso" else None
        if self.iso_warning is not None:
            warnings.warn(IsoOutsideRangeWarning(self.iso_warning), stacklevel=2)
        self.table = transfer_function(tf, opacity)
        self.background = packed_background(background)
        self._native.set_view(self.table.reshape(-1).tolist(), float(lo), float(hi), mode == "iso", self.iso,
                              self.background, 0.0, float(sampling),
                              bool(skip_empty), float(footprint))
        domain = self._native.topology.domain
        self.camera = camera_spec(width, height, fov, **parse_camera(camera, domain))

    @property
    def topology(self) -> Any:
        return self._native.topology

    def render(self, frame: int) -> np.ndarray:
        """Frame ``frame`` streamed through the engine and drawn: (height, width, 4) uint8 RGBA."""
        images: list[np.ndarray] = []

        def keep(_frame: int, image: np.ndarray) -> bool:
            images.append(image)
            return True

        self.play([frame], on_image=keep)
        return images[0]

    def blocks(self, frame: int) -> list[Any]:
        """Frame ``frame`` as :class:`headrace.amr.Block` s (level, cell box, world bounds, dense data): the
        form other renderers take (ANARI's ``amr`` spatial field)."""
        ds = self.dataset
        topology = topology_of(ds.attributes, ds.path)
        assert topology is not None  # the renderer was made, so the file is a volume
        return topology.blocks(ds.read(frame, self.field, stored_order=True))

    def image_of(self, scalars: np.ndarray) -> np.ndarray:
        """The image of a frame given in host memory (``cell_count`` float32 in brick order)."""
        return self._native.image(np.ascontiguousarray(scalars, dtype=np.float32).reshape(-1), self.camera)

    def ranges(self, scalars: np.ndarray) -> np.ndarray:
        """Each region's (min, max) for a frame in host memory, computed where the renderer runs."""
        return self._native.ranges(np.ascontiguousarray(scalars, dtype=np.float32).reshape(-1))

    def visible(self, scalars: np.ndarray) -> np.ndarray:
        return self._native.visible(np.ascontiguousarray(scalars, dtype=np.float32).reshape(-1))

    def share_slab(self, first: int, last: int, held: np.ndarray) -> None:
        """Sort-last (:func:`headrace.workloads.volume.sort_last.render_volume`): from now on this renderer draws region layers
        ``first`` to ``last`` along z from a frame buffer of the runs ``held`` ((first element, count) rows,
        ascending, packed in that order), which must cover ``topology.slab_cells(first, last)``."""
        self._native.share_slab(int(first), int(last), np.ascontiguousarray(held, dtype=np.uint64).reshape(-1, 2))

    def layer_of(self, scalars: Any, stream: int = 0) -> np.ndarray:
        """The frame buffer's slab as premultiplied RGBA, (height, width, 4) float32, no background: ``scalars``
        a host array (CPU reference) or a GPU buffer with a ``pointer`` (GPU renderer, on CUDA ``stream``)."""
        if self.ordinal >= 0:
            self._native.prepare_device(scalars.pointer, stream)
            return self._native.render_layer_device(scalars.pointer, self.camera, stream)
        flat = np.ascontiguousarray(scalars, dtype=np.float32).reshape(-1)
        self._native.prepare_host(flat)
        return self._native.render_layer_host(flat, self.camera)

    def draw_layer(self, scalars: Any, stream: int = 0) -> None:
        """Like :meth:`layer_of` on a GPU, the layer left in the renderer's GPU memory for :meth:`composited`."""
        if self.ordinal < 0:
            raise UsageError("draw_layer leaves the layer in GPU memory: the CPU reference has none (layer_of)")
        self._native.prepare_device(scalars.pointer, stream)
        self._native.draw_layer_device(scalars.pointer, self.camera, stream)

    def composited(self, compositor: Any, stream: int = 0) -> np.ndarray | None:
        """The layer :meth:`draw_layer` drew composited with every rank's by ``compositor``
        (``_ext.LayerCompositor``, collective): the image on rank 0, None elsewhere."""
        return compositor.composite(self._native, self.camera, stream)

    def play(self, frames: Iterable[int], *, stages: str = "all", on_image: Callable[[int, np.ndarray], bool] | None = None,
             slots: int = 3, **engine_options: Any) -> dict[str, Any]:
        """Seed 003's animation loop over ``frames`` (any order, strides, jumps) with the steps of ``stages``
        (:data:`STAGES`, cumulative): a run of the timeline record (``headrace.timeline``): per frame its spans
        of work in seconds since the run began, the frames per second over the frames after the first
        (``fps``: the steady rate, the pipeline filled) and over every frame from the run's start
        (``fps_from_start``: what a cold run is judged by)."""
        order = [int(f) for f in frames]
        if stages not in STAGES:
            raise UsageError(f"stages {stages!r}: expected one of {', '.join(STAGES)}")
        count = len(self.dataset.frames)
        for f in order:
            if not 0 <= f < count:
                raise UsageError(f"{self.dataset.path}: no frame {f} ({count} frames)")
        queue = None
        if stages == "all":
            engine = headrace.shared_engine(None if self.ordinal < 0 else self.ordinal,
                                            decode_on="gpu" if self.ordinal >= 0 else "cpu", **engine_options)
            queue = engine.queue._native
        result = self._native.play(queue, stages, order, self.camera, on_image, int(slots))
        frames_out = result["frames"]
        steady = frames_out[-1]["end"] - frames_out[0]["end"] if len(frames_out) > 1 else 0.0
        fps = (len(frames_out) - 1) / steady if steady > 0 else (1.0 / result["seconds"] if result["seconds"] > 0 else 0.0)
        fps_from_start = len(frames_out) / frames_out[-1]["end"] if frames_out and frames_out[-1]["end"] > 0 else 0.0
        return {"stages": stages, "enabled": list(STAGES[: STAGES.index(stages) + 1]), "seconds": result["seconds"],
                "frames_shown": len(frames_out), "fps": fps, "fps_from_start": fps_from_start, "frames": [
                    {"frame": f["frame"], "start": f["start"], "end": f["end"],
                     "spans": {kind: [list(s) for s in spans] for kind, spans in f["spans"].items()}} for f in frames_out],
                "frame_bytes": result["frame_bytes"], "stored_bytes": result["stored_bytes"], "notes": result["notes"]}

    def render_only_fps(self, frames: int | Iterable[int] = 0, repeats: int = 5) -> float:
        """Images per second rendering alone (the paper's ~5 FPS): each frame of ``frames`` resident in memory
        in turn, rendered ``repeats`` times; the rate over their mean time (frames differ in cost)."""
        chosen = [frames] if isinstance(frames, int) else list(dict.fromkeys(int(f) for f in frames))
        seconds = [self._native.render_only_seconds(self.camera, f, int(repeats)) for f in chosen]
        return len(seconds) / sum(seconds)


def _iso_outside(ds: Any, field: str, iso: float, recorded: tuple[float, float] | None) -> str | None:
    """What is wrong with an iso value outside the field's recorded values (``recorded``), or ``None``."""
    if recorded is None or recorded[0] <= iso <= recorded[1]:
        return None
    frames = len(ds.frames)
    return (f"{ds.path}: iso value {iso:g} lies outside the values of field '{field}', {recorded[0]:g} to "
            f"{recorded[1]:g} over its {frames} frame{'s' if frames != 1 else ''} (from the index's chunk ranges): the "
            "images show no surface; choose an iso value in that range")


def default_field(ds: Any) -> str:
    """The field a volume renderer draws when none is named: the file's first float32 field of one component."""
    scalars = [f.name for f in ds.fields if f.dtype == "float32" and f.components == 1]
    if not scalars:
        others = ", ".join(f"'{f.name}' is {f.dtype} x {f.components}" for f in ds.fields)
        raise UsageError(f"{ds.path}: no float32 field of one component to draw as a volume ({others}); the volume "
                         "renderer draws float32 scalars only (docs/volume.md, 'What it draws')")
    return scalars[0]
