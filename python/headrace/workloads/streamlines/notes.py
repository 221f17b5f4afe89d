"""What the tracer chose for the user without being told, said once each as a :class:`TraceNote`."""

from __future__ import annotations

import sys
import warnings

__all__ = ["TraceNote"]


class TraceNote(UserWarning):
    """What :func:`traceable`, :func:`trace_run` or :func:`convert_linear_flow` chose for the user without
    being told (a float64 velocity traced in float32, smaller blocks for a small cache, Hilbert
    partitions fitted to a small grid), said once each; ``headrace trace`` prints them on stderr."""


def say_note(text: str) -> None:
    """``text`` as a :class:`TraceNote`, pointing at the first caller outside headrace."""
    frame, level = sys._getframe(0), 1
    while frame.f_back is not None and (frame.f_globals.get("__name__", "").startswith("headrace")
                                        or frame.f_code.co_filename.endswith("contextlib.py")):
        frame, level = frame.f_back, level + 1
    warnings.warn(TraceNote(text), stacklevel=level)
