"""The I/O knobs by name (docs/settings.md).

The knobs are the fields of :class:`headrace._ext.Settings`, the C++ ``headrace::Settings`` bound once:
this module derives its list from there, so no list of knobs is written twice. Every keyword argument
that reads (``ds.read(..., threads=8)``, ``headrace.Queue(..., queue_depth=64)``, ``ds.stream(...)``)
goes through :func:`io_settings`: an unknown knob or a value of the wrong type or range is a
``UsageError`` naming it, never a ``TypeError``.
"""

from __future__ import annotations

from typing import Any

from headrace import _ext

__all__ = ["KNOBS", "io_settings", "split_knobs"]

KNOBS: tuple[str, ...] = tuple(name for name in dir(_ext.Settings)
                               if not name.startswith("_") and name not in ("current", "validate"))


def io_settings(**knobs: Any) -> Any:
    """The process's I/O settings (defaults, then ``HEADRACE_<NAME>``) with ``knobs`` set by name, validated."""
    settings = _ext.Settings.current()
    for name, value in knobs.items():
        if name not in KNOBS:
            raise _ext.UsageError(f"unknown I/O knob {name!r}; the knobs: {', '.join(KNOBS)} (docs/settings.md)")
        try:
            setattr(settings, name, value)
        except TypeError:
            expected = type(getattr(settings, name)).__name__
            raise _ext.UsageError(f"I/O knob {name}={value!r}: expected a {'non-negative ' if expected == 'int' else ''}"
                                  f"{expected}") from None
    settings.validate()
    return settings


def split_knobs(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(I/O knobs, the other options) of a keyword-argument dict."""
    knobs = {name: value for name, value in options.items() if name in KNOBS}
    return knobs, {name: value for name, value in options.items() if name not in KNOBS}
