"""Command-line flags of the engine's options and the I/O knobs, made from their bound classes
(``headrace.QueueOptions``, ``headrace.Settings``; docs/settings.md): ``--<name>`` per field, typed by its
default (a switch for a bool, a size with units for ``*_bytes``), its help the binding's docstring. A flag
not given leaves the option to its default and ``HEADRACE_<NAME>``; the values given are checked where
the options are built (``headrace.queue_options``): a bad one is a ``UsageError`` naming it (exit 2)."""

from __future__ import annotations

import argparse
import re
from typing import Any

from headrace import _ext
from headrace.settings import KNOBS, QUEUE_OPTIONS

__all__ = ["add_option_arguments", "given_options"]

_UNITS = {"": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30,
          "t": 1 << 40, "tib": 1 << 40}


def _bytes(text: str) -> int:
    """ "0", "268435456", "256M", "4 GiB" -> bytes (binary units)."""
    match = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", text)
    if match is None or match.group(2).lower() not in _UNITS:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a size in bytes, optionally with K/M/G/T or "
                                         "KiB/MiB/GiB/TiB, such as 4M")
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


def _add(group: argparse._ArgumentGroup, cls: type, defaults: Any, name: str) -> None:
    default = getattr(defaults, name)
    flag = "--" + name.replace("_", "-")
    shown = f"default {default!r}; env HEADRACE_{name.upper()}"
    text = f"{getattr(cls, name).__doc__ or name} ({shown})"
    if isinstance(default, bool):
        group.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, default=None, help=text)
    elif isinstance(default, int):
        group.add_argument(flag, dest=name, type=_bytes if name.endswith("_bytes") else int, default=None, help=text)
    else:
        group.add_argument(flag, dest=name, default=None, help=text)


def add_option_arguments(parser: argparse.ArgumentParser, *, queue: bool = True,
                         skip: tuple[str, ...] = ("device",)) -> None:
    """The I/O knobs' flags, and with ``queue`` the engine's options' (but those in ``skip``: a command's
    own flag for it)."""
    if queue:
        group = parser.add_argument_group("engine options (docs/settings.md)")
        for name in QUEUE_OPTIONS:
            if name not in skip:
                _add(group, _ext.QueueOptions, _ext.QueueOptions(), name)
    group = parser.add_argument_group("I/O knobs of the backends (docs/settings.md)")
    for name in KNOBS:
        _add(group, _ext.Settings, _ext.Settings(), name)


def given_options(args: argparse.Namespace, *, queue: bool = True, skip: tuple[str, ...] = ("device",)) -> dict[str, Any]:
    """The options (with ``queue``) and knobs given on the command line, by name (as added above)."""
    names = (tuple(n for n in QUEUE_OPTIONS if n not in skip) if queue else ()) + KNOBS
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
