"""A flow series (a vector field on a grid in native blocks or the Hilbert layout: ``headrace generate flow``)
drawn as a lattice of sphere glyphs coloured by the vectors' length, the viewer's scene of it
(:class:`LatticeScene`): the played frame, over which ``headrace view --pathlines`` draws the paths traced
through the series.

A lattice of at most :data:`LATTICE_SIDE` points a side, every ``stride``-th grid point (256^3 points give
24^3 glyphs), its vectors picked out of each streamed frame (in grid order, as the stream delivers it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from headrace.errors import UsageError
from headrace.workloads.points.point_set import COLOUR_FROM_SCALARS
from headrace.workloads.points.scene import GlyphScene
from headrace.workloads.points.staged import StagedPoints

__all__ = ["LATTICE_SIDE", "vector_field", "LatticeScene"]

LATTICE_SIDE = 24
FLOW_LAYOUTS = ("blocks", "hilbert")  # the tracer's layouts; a grid in grid order is a volume's
SPEED = "speed"  # the one thing a lattice is coloured by: its vectors' length


def vector_field(ds: Any) -> str | None:
    """The name of the file's vector field when it is a grid in native blocks or the Hilbert layout of one field
    of 3 float32 (the velocity of ``headrace generate flow``), else None."""
    attributes = ds.attributes
    if attributes.get("layout") not in FLOW_LAYOUTS or not {"grid_dims", "grid_origin", "grid_spacing"} <= set(attributes):
        return None
    vectors = [f.name for f in ds.fields if f.components == 3 and str(f.dtype) == "float32"]
    return vectors[0] if len(vectors) == 1 else None


class LatticeScene(GlyphScene):
    """The vector field of a flow series as a lattice of glyphs coloured by speed through
    the page's colour map, over 0 to the fastest (99th percentile) of the first frame drawn."""

    host_frames = True

    def __init__(self, ds: Any, device: int | None, width: int, height: int, footprint: float = 0.0) -> None:
        field = vector_field(ds)
        if field is None:
            raise UsageError(f"{ds.path}: expected a grid in native blocks or the Hilbert layout with one float32 x 3 field")
        attributes = ds.attributes
        dims = np.asarray(attributes["grid_dims"], dtype=np.int64)
        origin, spacing = (np.asarray(attributes[key], dtype=np.float64) for key in ("grid_origin", "grid_spacing"))
        stride = max(1, -(-int(dims.max()) // LATTICE_SIDE))
        axes = [np.arange(stride // 2, int(n), stride) for n in dims]
        k, j, i = np.meshgrid(axes[2], axes[1], axes[0], indexing="ij")
        self._lattice = (k.ravel(), j.ravel(), i.ravel())  # into the frame's (Z, Y, X, 3) grid
        super().__init__(ds, device, width, height, (origin, origin + (dims - 1) * spacing), [field])
        self._records = np.zeros((k.size, 8), dtype=np.float32)
        self._records[:, 0] = origin[0] + i.ravel() * spacing[0]
        self._records[:, 1] = origin[1] + j.ravel() * spacing[1]
        self._records[:, 2] = origin[2] + k.ravel() * spacing[2]
        self._records[:, 3] = 0.12 * stride * float(spacing.min())  # small: the paths drawn over them show
        self._records[:, 4:] = 1.0
        self.style = {**self.style, "colour_by": SPEED}
        self.speed_range: tuple[float, float] | None = None
        self._drawn: StagedPoints | None = None

    @staticmethod
    def draws(ds: Any) -> bool:
        return vector_field(ds) is not None

    @staticmethod
    def describe(ds: Any) -> dict[str, Any]:
        return {"fields": [vector_field(ds)], "value_range": None, "colour_by": [SPEED]}

    def set_style(self, changes: dict[str, Any], stream: int) -> bool:
        """Applies the page's style keys (radius scale, colour map; colour by speed alone); the field streamed
        never changes (False)."""
        style = self.restyled(changes)
        if style["colour_by"] != SPEED:
            raise UsageError(f"{self.dataset.path}: a flow's lattice is coloured by {SPEED}, not {style['colour_by']!r}")
        self.style = style
        if self.speed_range is not None:
            self.apply_look(style, COLOUR_FROM_SCALARS, self.speed_range)
        return False

    def prepare(self, frame: Any, stream: int) -> None:
        vectors = frame[self.fields[0]].numpy()[self._lattice].astype(np.float64)
        speeds = np.sqrt((vectors ** 2).sum(axis=1)).astype(np.float32)
        if self.speed_range is None:  # the first frame's fastest: one colour scale as the series plays
            high = float(np.percentile(speeds, 99)) if len(speeds) else 1.0
            self.speed_range = (0.0, high if high > 0 else 1.0)
            self.apply_look(self.style, COLOUR_FROM_SCALARS, self.speed_range)
        self._drawn = StagedPoints(self._records, speeds, self.device)

    def render(self, frame: Any, camera: Any, stream: int) -> np.ndarray:
        self._renderer.set_camera(camera.spec(self.width, self.height))
        assert self._drawn is not None
        return self._drawn.draw(self._renderer, stream)
