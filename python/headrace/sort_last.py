"""Deprecated: sort-last rendering is each workload's many-rank form,
:mod:`headrace.workloads.particles.sort_last` and :mod:`headrace.workloads.volume.sort_last`; reading a
frame's chunks is :mod:`headrace.workloads.chunks`. Each old name still works here for one release, with a
:class:`DeprecationWarning` naming its new place."""

from headrace._deprecated import moved

_PLACES = {
    **{name: "headrace.workloads.particles.sort_last" for name in (
        "share_chunks", "composite_by_depth", "render_particles", "NO_KEY")},
    **{name: "headrace.workloads.volume.sort_last" for name in (
        "chunks_holding", "composite_front_to_back", "VolumeSlabs", "render_volume")},
    "frame_chunks": "headrace.workloads.chunks",
}

__all__ = list(_PLACES)
__getattr__ = moved(__name__, _PLACES)
