"""Argument types shared by the subcommands."""

from __future__ import annotations

import argparse
import re
import sys

__all__ = ["parse_size", "parse_size_or_zero", "choose_device"]

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30,
          "t": 1 << 40, "tib": 1 << 40}


def choose_device(text: str | None, instead: str = "host memory instead") -> int | str:
    """--device: a GPU ordinal or "cpu"; none given, GPU 0 when there is one, else "cpu", said on stderr
    with ``instead`` (a fallback is never silent)."""
    if text is None:
        from headrace import _ext

        if _ext.gpu_count() > 0:
            return 0
        print(f"headrace: no GPU ({_ext.gpu_unavailable_reason() or '0 devices'}): {instead} "
              "(--device cpu asks for it and silences this)", file=sys.stderr)
        return "cpu"
    return "cpu" if text == "cpu" else int(text)


def _size(text: str, least: int) -> int:
    match = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", text)
    if match is None or match.group(2).lower() not in _UNITS or int(match.group(1)) < least:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a {'positive ' if least else ''}size in bytes, optionally "
                                         "with K/M/G/T or KiB/MiB/GiB/TiB, such as 4M")
    return int(match.group(1)) * _UNITS[match.group(2).lower()]


def parse_size(text: str) -> int:
    """ "268435456", "256M", "256MiB", "4 GiB" -> bytes (binary units); at least 1."""
    return _size(text, 1)


def parse_size_or_zero(text: str) -> int:
    """As parse_size, and 0 (an option whose 0 means "none" or "the default")."""
    return _size(text, 0)
