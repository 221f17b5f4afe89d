"""Deprecated: the particle renderers are :mod:`headrace.workloads.particles` (a point set's,
:mod:`headrace.workloads.points`), cameras and images :mod:`headrace.imaging`. Each old name still works
here for one release, with a :class:`DeprecationWarning` naming its new place."""

from headrace._deprecated import moved

_PARTICLES, _POINTS, _IMAGING = "headrace.workloads.particles", "headrace.workloads.points", "headrace.imaging"
_PLACES = {
    **{name: _PARTICLES for name in ("METHODS", "GPU_METHODS", "PLAIN_METHOD_CODECS", "method_codec", "StreamingRenderer",
                                     "render_frame", "render_streamed", "render_particles")},
    **{name: _POINTS for name in ("PointSetRenderer", "draws_point_set", "POINT_OPTIONS")},
    **{name: _IMAGING for name in ("frame_of", "parse_camera", "view_box", "write_image", "write_animation")},
}

__all__ = list(_PLACES)
__getattr__ = moved(__name__, _PLACES)
