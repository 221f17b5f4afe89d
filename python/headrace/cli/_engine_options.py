"""Command-line flags of the engine's options and the I/O knobs, made from their bound classes
(``headrace.QueueOptions``, ``headrace.Settings``; docs/settings.md): ``--<name>`` per field, typed by its
default (a switch for a bool, a size with units for ``*_bytes``), its help the binding's docstring. A flag
not given leaves the option to its default and ``HEADRACE_<NAME>``. A value given is checked as it is
parsed, by the same validation the Python API runs (``Settings.validate``, ``QueueOptions.validate``):
out of range, it is a one-line usage error with the range the engine states (exit 2)."""

from __future__ import annotations

import argparse
import re
from typing import Any

from headrace import _ext
from headrace.cli._shared import Bounded, Size
from headrace.settings import KNOBS, QUEUE_OPTIONS, io_settings, queue_options

__all__ = ["add_option_arguments", "given_options"]


def _queue_names(queue: bool, skip: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(name for name in QUEUE_OPTIONS if name not in skip) if queue else ()


class EngineValue(Bounded[Any]):
    """One option's or knob's value: parsed by the type of its default (a size with units for
    ``*_bytes``), then validated by the engine's own rules, so the range is stated in one place."""

    least = most = None  # the engine states them in its message

    def __init__(self, name: str, default: Any) -> None:
        self.name, self.default = name, default

    def describe(self) -> str:
        if isinstance(self.default, int):
            return "a size (bytes, or with K/M/G/T such as 64M)" if self.name.endswith("_bytes") else "a whole number"
        return "a word"

    def parse(self, text: str) -> Any:
        value: Any = text
        if isinstance(self.default, int):
            if re.fullmatch(r"\s*-\s*\d.*", text):
                raise argparse.ArgumentTypeError(self._refusal_of(text.strip()))
            value = Size(0, 1 << 62).parse(text) if self.name.endswith("_bytes") else None
            if value is None:
                if re.fullmatch(r"\s*\+?\d+\s*", text) is None:
                    raise self.fail(text)
                value = int(text)
        self._validate(value)
        return value

    def _validate(self, value: Any) -> None:
        try:
            (io_settings if self.name in KNOBS else queue_options)(**{self.name: value})
        except _ext.UsageError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    def _refusal_of(self, negative: str) -> str:
        """The engine's range for a negative value, which its unsigned fields cannot even hold: the
        engine is asked about a value above every range, and its answer says what it takes."""
        try:
            self._validate((1 << 62) if self.name.endswith("_bytes") else (1 << 31) - 1)
        except argparse.ArgumentTypeError as refused:
            return re.sub(r"got \d+$", f"got {negative}", str(refused))
        return f"{self.name}: expected {self.describe()} of at least 0, got {negative}"

    def bad_examples(self) -> list[str]:
        if isinstance(self.default, int):
            return ["", "abc", "-1", "99999999999999999999999"]
        return ["", "bogus"]

    def good_examples(self) -> list[str]:
        return [str(self.default)]


def _add(group: argparse._ArgumentGroup, cls: type, defaults: Any, name: str) -> None:
    default = getattr(defaults, name)
    flag = "--" + name.replace("_", "-")
    shown = f"default {default!r}; env HEADRACE_{name.upper()}"
    text = f"{getattr(cls, name).__doc__ or name} ({shown})"
    if isinstance(default, bool):
        group.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction, default=None, help=text)
    else:
        group.add_argument(flag, dest=name, type=EngineValue(name, default), default=None, help=text)


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
