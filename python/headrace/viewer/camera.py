"""Deprecated: the orbit camera is :class:`headrace.imaging.OrbitCamera` (also
:class:`headrace.viewer.OrbitCamera`). Each old name still works here for one release, with a
:class:`DeprecationWarning` naming its new place."""

from headrace._deprecated import moved

_PLACES = {"OrbitCamera": "headrace.imaging", "DEGREES_PER_PIXEL": "headrace.imaging"}

__all__ = list(_PLACES)
__getattr__ = moved(__name__, _PLACES)
