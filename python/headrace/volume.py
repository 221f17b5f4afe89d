"""Deprecated: the volume renderer is :mod:`headrace.workloads.volume`, value ranges from the index
:func:`headrace.imaging.value_range`. Each old name still works here for one release, with a
:class:`DeprecationWarning` naming its new place."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from headrace import imaging
from headrace._deprecated import moved, warn_moved

_PLACES = {
    **{name: "headrace.workloads.volume" for name in (
        "STAGES", "STAGE_STEPS", "MODES", "IsoOutsideRangeWarning", "VolumeRenderer", "transfer_function", "is_volume",
        "parse_opacity")},
    "TF_ENTRIES": "headrace.imaging:COLOUR_TABLE_ENTRIES",
}


def recorded_value_range(ds: Any, field: str, frames: Iterable[int] | None = None) -> tuple[float, float] | None:
    """Deprecated: :func:`headrace.imaging.recorded_range`."""
    warn_moved(f"{__name__}.recorded_value_range", "headrace.imaging.recorded_range")
    return imaging.recorded_range(ds, field, frames=frames)


def field_value_range(ds: Any, field: str, frames: Iterable[int] | None = None) -> tuple[float, float]:
    """Deprecated: :func:`headrace.imaging.value_range`."""
    warn_moved(f"{__name__}.field_value_range", "headrace.imaging.value_range")
    return imaging.value_range(ds, field, frames=frames)


__all__ = [*_PLACES, "recorded_value_range", "field_value_range"]
__getattr__ = moved(__name__, _PLACES)
