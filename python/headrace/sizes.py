"""Sizes in bytes as people write them: ``4096``, ``64K``, ``256M``, ``1GiB`` (binary units), parsed
and described one way for the command line, the lab's scripts and messages."""

from __future__ import annotations

import re

__all__ = ["parse_size", "describe_size", "SIZE_UNITS"]

SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30,
              "t": 1 << 40, "tib": 1 << 40}


def parse_size(text: str) -> int:
    """Bytes of ``text`` (a whole number, optionally followed by K, M, G, T, KiB, ... or B); a
    ``ValueError`` for anything else (so it serves as an argparse ``type``)."""
    match = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", text)
    if match is None or match.group(2).lower() not in SIZE_UNITS:
        raise ValueError(f"expected a size such as 4096, 64K or 256M, got {text!r}")
    return int(match.group(1)) * SIZE_UNITS[match.group(2).lower()]


def describe_size(size: int) -> str:
    """4096 -> "4 KiB", 3 << 30 -> "3 GiB", 1000 -> "1000 bytes" (exact, for ranges)."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} bytes" if size != 1 else "1 byte"
