"""A volume's transfer function: a colour map's colours and an opacity over the field's value range, as
the renderer's (256, 4) float32 RGBA table."""

from __future__ import annotations

from typing import Any

import numpy as np

from headrace.errors import UsageError
from headrace.imaging import COLOUR_TABLE_ENTRIES, colour_table

__all__ = ["parse_opacity", "transfer_function", "opacity_points", "opacity_table"]


def parse_opacity(spec: str) -> tuple[float, float, float]:
    """``ramp:A,B,MAX`` (fractions of the range, 0 <= A < B <= 1, 0 < MAX <= 1) or ``flat:MAX``."""
    kind, _, rest = spec.partition(":")
    try:
        values = [float(v) for v in rest.split(",")] if rest else []
        if kind == "ramp" and len(values) == 3 and 0 <= values[0] < values[1] <= 1 and 0 < values[2] <= 1:
            return values[0], values[1], values[2]
        if kind == "flat" and len(values) == 1 and 0 < values[0] <= 1:
            return 0.0, 0.0, values[0]
    except ValueError:
        pass
    raise UsageError(f"opacity {spec!r}: expected ramp:A,B,MAX (0 <= A < B <= 1, 0 < MAX <= 1) or flat:MAX")


def transfer_function(colour_map: str = "viridis", opacity: str = "ramp:0.1,1,0.2") -> np.ndarray:
    """A (256, 4) float32 RGBA table: the colour map's colours, the opacity of :func:`parse_opacity`."""
    table = colour_table(colour_map).copy()
    start, end, most = parse_opacity(opacity)
    t = (np.arange(COLOUR_TABLE_ENTRIES) + 0.5) / COLOUR_TABLE_ENTRIES
    table[:, 3] = most if end == 0 else most * np.clip((t - start) / (end - start), 0.0, 1.0)
    return table



def opacity_points(points: Any) -> list[list[float]]:
    """Control points [fraction, opacity]: at least two, fractions ascending in 0..1, opacities in 0..1."""
    try:
        array = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError):
        array = np.empty((0,))
    ok = (array.ndim == 2 and len(array) >= 2 and array.shape[-1] == 2 and np.isfinite(array).all()
          and (array >= 0).all() and (array <= 1).all() and (np.diff(array[:, 0]) >= 0).all())
    if not ok:
        raise UsageError(f"opacity {points!r}: expected two or more [fraction, opacity] points, fractions ascending, "
                         "both in 0..1")
    return array.tolist()


def opacity_table(colour_map: str, points: Any, offered: tuple[str, ...] | None = None) -> np.ndarray:
    """A (256, 4) float32 RGBA table: the colour map's colours (one of ``offered``, when given), the opacity
    through the [fraction, opacity] control points (:func:`opacity_points`), linear between them."""
    table = colour_table(colour_map, offered).copy()
    control = np.asarray(points, dtype=np.float64)
    centres = (np.arange(table.shape[0]) + 0.5) / table.shape[0]
    table[:, 3] = np.interp(centres, control[:, 0], control[:, 1])
    return table
