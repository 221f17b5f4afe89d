"""The particles workload: frames of the ``particles`` record (x, y, z, radius, r, g, b, a) streamed through
the engine and drawn as sphere glyphs (seed ``000_…``).

    image = headrace.workloads.particles.render_frame("p.hrc", 0, width=1024, height=768, camera="orbit:30,20")

:class:`StreamingRenderer` streams and draws a series frame by frame with one camera; :func:`render_frame`
and :func:`render_streamed` draw one frame (a point set through :mod:`headrace.workloads.points`);
:func:`render_particles` draws an array; :class:`ParticleScene` is the viewer's scene;
:mod:`headrace.workloads.particles.sort_last` draws a frame across the ranks of an MPI job, composited by
depth.
"""

from headrace.workloads.particles.frames import render_frame, render_particles, render_streamed
from headrace.workloads.particles.scene import PARTICLE_COLUMNS, ParticleScene, particle_scalar_fields
from headrace.workloads.particles.streaming import GPU_METHODS, METHODS, PLAIN_METHOD_CODECS, StreamingRenderer, method_codec

__all__ = ["METHODS", "GPU_METHODS", "PLAIN_METHOD_CODECS", "method_codec", "StreamingRenderer", "render_frame",
           "render_streamed", "render_particles", "PARTICLE_COLUMNS", "ParticleScene", "particle_scalar_fields"]
