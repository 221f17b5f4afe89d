"""Options by name (docs/settings.md): the I/O knobs and the engine's queue options.

Each set is one C++ struct bound once as a typed class: :class:`headrace._ext.Settings` (the I/O knobs
of the backends) and :class:`headrace._ext.QueueOptions` (the engine: backend, cache policy, staging,
pinning, decoding, ...; its ``io`` field holds the knobs). This module derives the names from those
bindings, so no list of options is written twice. Every keyword argument that configures a read or a
queue (``ds.read(..., threads=8)``, ``headrace.Queue(staging_bytes=...)``, ``ds.stream(pin_files="off",
queue_depth=32)``) goes through :func:`queue_options` or :func:`io_settings`: an unknown name or a value
of the wrong type or range is a ``UsageError`` naming it, never a ``TypeError``.
"""

from __future__ import annotations

from typing import Any

from headrace import _ext

__all__ = ["KNOBS", "QUEUE_OPTIONS", "device_ordinal", "io_settings", "queue_options"]


def _fields(cls: type) -> tuple[str, ...]:
    return tuple(name for name in dir(cls) if not name.startswith("_") and isinstance(getattr(cls, name), property))


KNOBS: tuple[str, ...] = _fields(_ext.Settings)
QUEUE_OPTIONS: tuple[str, ...] = tuple(name for name in _fields(_ext.QueueOptions) if name != "io")


def _set(target: Any, kind: str, name: str, value: Any) -> None:
    try:
        setattr(target, name, value)
    except TypeError:
        expected = {"pin_files": "auto, on, off or a bool", "device": "a GPU number (0, 1, ...), or 'cpu' or -1 for host memory"}.get(
            name, {"int": "a non-negative int", "bool": "a bool", "str": "a str"}.get(type(getattr(target, name)).__name__))
        raise _ext.UsageError(f"{kind} {name}={value!r}: expected {expected}") from None


def io_settings(base: Any = None, **knobs: Any) -> Any:
    """A copy of ``base`` (default: the process's I/O settings, defaults then ``HEADRACE_<NAME>``) with
    ``knobs`` set by name, validated."""
    settings = _ext.Settings(base if base is not None else _ext.Settings.current())
    for name, value in knobs.items():
        if name not in KNOBS:
            raise _ext.UsageError(f"unknown I/O knob {name!r}; the knobs: {', '.join(KNOBS)} (docs/settings.md)")
        _set(settings, "I/O knob", name, value)
    settings.validate()
    return settings


def queue_options(base: Any = None, **named: Any) -> Any:
    """A copy of ``base`` (default: ``QueueOptions.from_environment()``) with options and I/O knobs set
    by name, validated: the :class:`headrace._ext.QueueOptions` a queue, an engine and a stream take."""
    options = _ext.QueueOptions(base if base is not None else _ext.QueueOptions.from_environment())
    knobs = {}
    for name, value in named.items():
        if name in KNOBS:
            knobs[name] = value
        elif name in QUEUE_OPTIONS:
            _set(options, "queue option", name, value)
        else:
            raise _ext.UsageError(f"unknown option {name!r}; the queue options: {', '.join(QUEUE_OPTIONS)}; the I/O "
                                  f"knobs: {', '.join(KNOBS)} (docs/settings.md)")
    if knobs:
        options.io = io_settings(options.io, **knobs)
    options.validate()
    return options


def device_ordinal(device: int | str | None) -> int | None:
    """A ``device=`` argument: a GPU number (``0``, ``"0"``, ``"cuda:0"``), or None / ``"cpu"`` / -1 for host
    memory; anything else is a UsageError saying so."""
    if device is None or device == "cpu" or device == -1:
        return None
    text = str(device).removeprefix("cuda:")
    if isinstance(device, bool) or not text.isdigit():
        raise _ext.UsageError(f"device={device!r}: expected a GPU number (0, 1, ...) or 'cpu' for host memory")
    return int(text)
