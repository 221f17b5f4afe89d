"""Deprecated: point sets are :mod:`headrace.workloads.points`, value ranges from the index
:func:`headrace.imaging.value_range`. Each old name still works here for one release, with a
:class:`DeprecationWarning` naming its new place."""

from headrace._deprecated import moved

_PLACES = {
    **{name: "headrace.workloads.points" for name in (
        "POSITION_NAMES", "position_names", "RECORD_FIELD", "COLOUR_FROM_SCALARS", "ColourBy", "PointSet",
        "is_particle_record", "find_positions", "default_radius", "colour_choices", "unique", "upload", "StagedPoints")},
    **{name: "headrace.workloads.points.point_set" for name in (
        "RADIUS_NAMES", "COLOUR_NAMES", "DEFAULT_COLOUR", "MAGNITUDE", "SPACING_FRACTION", "MOST_DIAGONAL_FRACTION")},
    "component_range": "headrace.imaging:value_range",
}

__all__ = list(_PLACES)
__getattr__ = moved(__name__, _PLACES)
