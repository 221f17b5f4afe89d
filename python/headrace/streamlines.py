"""Deprecated: streamlines are :mod:`headrace.workloads.streamlines`. Each old name still works here for
one release, with a :class:`DeprecationWarning` naming its new place."""

from headrace._deprecated import moved

_STREAMLINES = "headrace.workloads.streamlines"
_PLACES = {
    **{name: _STREAMLINES for name in (
        "TraceResult", "trace", "trace_run", "trace_handed", "distribution", "DISTRIBUTIONS", "grid_of", "uniform_seeds",
        "rake_seeds", "feature_seeds", "load_seeds", "write_lines", "write_traced", "TERMINATION_CODES",
        "convert_to_hilbert", "convert_linear_flow", "traceable", "DEFAULT_BLOCK", "MOST_MADVISE_INTERVAL_S",
        "TraceNote", "velocity_of", "fitted_block", "fitted_hilbert_bits", "DEFAULT_HILBERT_BITS", "VELOCITY_NAMES",
        "VELOCITY_COMPONENTS")},
    **{name: f"{_STREAMLINES}.layouts" for name in ("SMALLEST_BLOCK_SIDE", "UNITS_WANTED", "UNITS_NEEDED")},
    "TRACED_LAYOUTS": f"{_STREAMLINES}.traceable",
}

__all__ = list(_PLACES)
__getattr__ = moved(__name__, _PLACES)
