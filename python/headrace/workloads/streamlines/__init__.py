"""Streamlines of flow-field containers (seed ``002_…``): seeds, tracing, and writing the lines.

    points, offsets = headrace.trace("flow.hrc", headrace.workloads.streamlines.uniform_seeds("flow.hrc", 512),
                                     steps=1000, step_size=0.01, manager="mmap", threads=32)

Line ``i`` is ``points[offsets[i]:offsets[i + 1]]`` (world coordinates, float32), one line per seed in
seed order. The container holds a ``velocity`` field (float32 x 3) in the native-block layout
(``headrace generate flow``) or the Hilbert layout (``convert_to_hilbert``); any other flow field in grid
order is made traceable on the fly (:func:`traceable`). ``manager="user"`` reads through the block cache
(``cache_bytes``, ``banks``, ``direct``; Hilbert units of ``unit_pages`` pages); ``manager="mmap"`` maps
the file (``madvise_interval_s``, ``memory_budget_bytes``). ``manager="resident"`` (the default,
:func:`default_manager`) runs in rounds: the engine's queue reads the units the lines ask for
(``backend``) into a cache of ``cache_bytes``, in GPU memory with ``device=0`` where every half-line steps
on its own GPU thread, or in host memory with ``device="cpu"`` where CPU threads run the same rounds (the
reference the GPU's lines equal bit for bit; all managers give the same lines).

Under MPI (``headrace.distributed``) the seeds are shared in blocks among the ranks, and the field either
way :func:`distribution` picks: *replicate*, every rank reading any unit its lines need through its own
cache (the field is shared through the file), or *hand-off* (:func:`trace_handed`), every rank holding
its run of block planes along z and the blocks next to them, and a line that needs a block held elsewhere
handed to the rank that holds it. Both give one tracer's lines, bit for bit.

Pathlines of a time series (:func:`trace_pathlines`, :func:`write_pathlines`) carry each seed through space
and time, the velocity linear in time between the frames that bracket it; :class:`PathOverlay` draws them over
a rendered image up to a time (``headrace view SERIES --pathlines PATHS.npz``).

:class:`TraceSession` holds one tracer (its GPU context, kernels, queue and cached blocks) across traces
of one field: a notebook's second call or a viewer's next seeds pay no setup and read no block again.
"""

from headrace.workloads.streamlines.flow import VELOCITY_COMPONENTS, VELOCITY_NAMES, grid_of, velocity_of
from headrace.workloads.streamlines.handoff import DISTRIBUTIONS, distribution, trace_handed
from headrace.workloads.streamlines.layouts import (DEFAULT_BLOCK, DEFAULT_HILBERT_BITS, convert_linear_flow,
                                                    convert_to_hilbert, fitted_block, fitted_hilbert_bits)
from headrace.workloads.streamlines.lines import TERMINATION_CODES, write_lines, write_traced
from headrace.workloads.streamlines.notes import TraceNote
from headrace.workloads.streamlines.overlay import PathOverlay
from headrace.workloads.streamlines.pathlines import (PathlineResult, positions_at, release_times, trace_pathlines,
                                                      trace_streaklines, write_pathlines, write_series)
from headrace.workloads.streamlines.seeds import feature_seeds, load_seeds, rake_seeds, uniform_seeds
from headrace.workloads.streamlines.session import TraceSession
from headrace.workloads.streamlines.traceable import traceable
from headrace.workloads.streamlines.tracer import MOST_MADVISE_INTERVAL_S, TraceResult, default_manager, trace, trace_run

__all__ = ["TraceResult", "trace", "trace_run", "default_manager", "trace_handed", "TraceSession", "distribution", "DISTRIBUTIONS", "grid_of",
           "uniform_seeds", "rake_seeds", "feature_seeds", "load_seeds", "write_lines", "write_traced",
           "TERMINATION_CODES", "convert_to_hilbert", "convert_linear_flow", "traceable", "DEFAULT_BLOCK",
           "MOST_MADVISE_INTERVAL_S", "TraceNote", "velocity_of", "fitted_block", "fitted_hilbert_bits",
           "DEFAULT_HILBERT_BITS", "VELOCITY_NAMES", "VELOCITY_COMPONENTS", "PathlineResult", "trace_pathlines",
           "write_pathlines", "trace_streaklines", "release_times", "positions_at", "write_series", "PathOverlay"]
