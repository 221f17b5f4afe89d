"""The viewer's scene of a volume: a float32 field of a grid or AMR file, each frame given resident (in GPU
memory, or host memory for the CPU reference), ray-marched from any camera in the look the page sets."""

from __future__ import annotations

from typing import Any

import numpy as np

from headrace import _ext
from headrace.errors import UsageError
from headrace.imaging import COLOUR_MAPS, OrbitCamera, colour_table, device_address, packed_background, value_range
from headrace.workloads.volume.renderer import MODES, default_field, is_volume
from headrace.workloads.volume.transfer import opacity_points, opacity_table

__all__ = ["VolumeScene"]


class VolumeScene:
    """A float32 field of a grid or AMR file, ray-marched (direct volume rendering or an iso-surface)
    with a transfer function fixed across frames: a colour map and an opacity curve over the field's range
    over every frame. ``footprint`` (> 0): steps no shorter than that many pixel footprints."""

    kind = "volume"
    host_frames = False

    def __init__(self, ds: Any, device: int | None, width: int, height: int, footprint: float = 0.0) -> None:
        self.dataset, self.device, self.width, self.height = ds, device, width, height
        field = default_field(ds)
        self.fields = [field]
        self._native = _ext.VolumeRenderer(ds.container, ds.container.field_index(field), -1 if device is None else device)
        self.value_range = value_range(ds, field)
        self.home = OrbitCamera.framing(self._native.topology.domain)
        self.footprint = float(footprint)
        lo, hi = self.value_range
        self.style: dict[str, Any] = {"colour_map": "viridis", "opacity": [[0.1, 0.0], [1.0, 0.2]], "mode": "dvr",
                                      "iso": (lo + hi) / 2}
        self._prepared = False
        self._apply()

    @staticmethod
    def draws(ds: Any) -> bool:
        """Whether the file's attributes describe a grid or AMR (:func:`is_volume`)."""
        return is_volume(ds)

    @staticmethod
    def describe(ds: Any) -> dict[str, Any]:
        """The page's ``hello`` entries of the file: the field drawn, its value range and the iso value."""
        field = default_field(ds)
        lo, hi = value_range(ds, field)
        return {"fields": [field], "value_range": [lo, hi], "iso": (lo + hi) / 2, "colour_by": []}

    def _apply(self) -> None:
        style = self.style
        table = opacity_table(str(style["colour_map"]), style["opacity"], COLOUR_MAPS)
        lo, hi = self.value_range
        self._native.set_view(table.reshape(-1).tolist(), lo, hi, style["mode"] == "iso", float(style["iso"]),
                              packed_background((0, 0, 0)), 0.0, 1.0, True, self.footprint)

    def set_style(self, changes: dict[str, Any], stream: int) -> bool:
        """Applies the page's style keys (colour map, opacity points, mode, iso value); the fields streamed
        never change (False)."""
        style: dict[str, Any] = {**self.style, **{k: changes[k] for k in ("colour_map", "opacity", "mode", "iso") if k in changes}}
        if style["mode"] not in MODES:
            raise UsageError(f"mode {style['mode']!r}: expected dvr or iso")
        style["opacity"] = opacity_points(style["opacity"])
        style["iso"] = float(style["iso"])
        colour_table(str(style["colour_map"]), COLOUR_MAPS)  # names the maps offered
        previous, self.style = self.style, style
        try:
            self._apply()
        except Exception:
            self.style = previous
            raise
        if self._prepared:
            self._native.classify(stream)
        return False

    def prepare(self, frame: Any, stream: int) -> None:
        """A newly delivered frame: its regions' value ranges and classification, which any camera reuses."""
        scalars = frame[self.fields[0]]
        if self.device is None:
            self._native.prepare_host(scalars.numpy().reshape(-1))
        else:
            frame.wait_on_stream(stream)
            self._native.prepare_device(device_address(scalars), stream)
        self._prepared = True

    def render(self, frame: Any, camera: OrbitCamera, stream: int) -> np.ndarray:
        scalars = frame[self.fields[0]]
        spec = camera.spec(self.width, self.height)
        if self.device is None:
            return self._native.render_host(scalars.numpy().reshape(-1), spec)
        return self._native.render_device(device_address(scalars), spec, stream)
