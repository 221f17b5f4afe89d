"""The volume workload: time-varying grids and AMR streamed and ray-marched (seed ``003_…``).

    renderer = headrace.workloads.volume.VolumeRenderer("amr.hrc", device=0, tf="viridis")
    image = renderer.render(0)

:class:`VolumeRenderer` draws a float32 field frame by frame and plays seed 003's animation loop;
:func:`transfer_function` is its colour and opacity table; :class:`VolumeScene` is the viewer's scene;
:mod:`headrace.workloads.volume.sort_last` (:class:`VolumeSlabs`, :func:`render_volume`) draws a frame
across the ranks of an MPI job, a slab each, composited front to back.
"""

from headrace.workloads.volume.renderer import (MODES, STAGE_STEPS, STAGES, IsoOutsideRangeWarning, VolumeRenderer,
                                                default_field, is_volume)
from headrace.workloads.volume.scene import VolumeScene
from headrace.workloads.volume.sort_last import VolumeSlabs, chunks_holding, composite_front_to_back, render_volume
from headrace.workloads.volume.transfer import opacity_points, opacity_table, parse_opacity, transfer_function

__all__ = ["STAGES", "STAGE_STEPS", "MODES", "IsoOutsideRangeWarning", "VolumeRenderer", "is_volume", "default_field",
           "transfer_function", "parse_opacity", "opacity_points", "opacity_table", "VolumeScene", "VolumeSlabs",
           "render_volume", "chunks_holding", "composite_front_to_back"]
