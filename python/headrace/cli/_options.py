"""Command-line flags of the engine's options and the I/O knobs, made from their bound classes
(``headrace.QueueOptions``, ``headrace.Settings``; docs/settings.md): ``--<name>`` per field, typed by its
default (a switch for a bool, a size with units for ``*_bytes``), its help the binding's docstring. A flag
not given leaves the option to its default and ``HEADRACE_<NAME>``; the values given are checked where
the options are built (``headrace.queue_options``): a bad one is a ``UsageError`` naming it (exit 2)."""

from __future__ import annotations

import argparse
from typing import Any

from headrace import _ext
from headrace.cli._arguments import parse_size_or_zero
from headrace.settings import KNOBS, QUEUE_OPTIONS

__all__ = ["add_option_arguments", "given_options"]


def _queue_names(queue: bool, skip: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(name for name in QUEUE_OPTIONS if name not in skip) if queue else ()


def _add(group: argparse._ArgumentGroup, cls: type, defaults: Any, name: str) -> None:
    default = getattr(defaults, name)
    flag = "--" + name.replace("_", "-")
    shown = f"default {default!r}; env HEADRACE_{name.upper()}"
    text = f"{getattr(cls, name).__doc__ or name} ({shown})"
    if isinstance(default, bool):
        group.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, default=None, help=text)
    elif isinstance(default, int):
        group.add_argument(flag, dest=name, type=parse_size_or_zero if name.endswith("_bytes") else int, default=None, help=text)
    else:
        group.add_argument(flag, dest=name, default=None, help=text)


def add_option_arguments(parser: argparse.ArgumentParser, *, queue: bool = True,
                         skip: tuple[str, ...] = ("device",)) -> None:
    """The I/O knobs' flags, and with ``queue`` the engine's options' (but those in ``skip``: a command's
    own flag for it)."""
    if queue:
        group = parser.add_argument_group("engine options (docs/settings.md)")
        for name in _queue_names(queue, skip):
            _add(group, _ext.QueueOptions, _ext.QueueOptions(), name)
    group = parser.add_argument_group("I/O knobs of the backends (docs/settings.md)")
    for name in KNOBS:
        _add(group, _ext.Settings, _ext.Settings(), name)


def given_options(args: argparse.Namespace, *, queue: bool = True, skip: tuple[str, ...] = ("device",)) -> dict[str, Any]:
    """The options (with ``queue``) and knobs given on the command line, by name (as added above)."""
    names = _queue_names(queue, skip) + KNOBS
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
