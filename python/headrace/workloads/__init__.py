"""What headrace draws and traces, one package a workload, each with its renderer or tracer, its viewer
scene and its many-rank form where it has one:

- :mod:`headrace.workloads.particles`: the particles record streamed and drawn as sphere glyphs
  (``sort_last``: many ranks composited by depth);
- :mod:`headrace.workloads.points`: any point set of a file's fields, drawn as sphere glyphs;
- :mod:`headrace.workloads.volume`: grids and AMR ray-marched (``sort_last``: slabs composited front to back);
- :mod:`headrace.workloads.streamlines`: streamlines traced through a flow field (lines handed between ranks).

What every renderer shares (cameras, colour maps, images) is :mod:`headrace.imaging`; reading a frame's
chunks for a many-rank form is :mod:`headrace.workloads.chunks`.
"""

__all__: list[str] = []  # the workloads are its subpackages, each imported where it is used
