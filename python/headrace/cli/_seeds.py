"""Where streamlines start (``--seeds``) and how long they run (``--steps``): the options that
``trace`` and ``bench streamlines`` share, checked as they are parsed."""

from __future__ import annotations

import argparse
import math
import os
from typing import Any

import numpy as np

from headrace.cli._shared import Bounded, Integer
from headrace.errors import UsageError
from headrace.workloads import streamlines

__all__ = ["MOST_SEEDS", "MOST_STEPS", "UNIT_PAGES", "Seeds", "seed_spec", "parse_seeds", "expect_memory_for_lines"]

MOST_SEEDS = 1 << 24  # a count of uniform or rake seeds (16 Mi lines: 192 MiB of seeds alone)
MOST_STEPS = 1_000_000
_SEEDS_FORMS = "uniform:N, feature:LOW[:HIGH], rake:X0,Y0,Z0:X1,Y1,Z1:N or a .npy file"


def _count(word: str) -> int:
    if not word.strip().isdigit() or not 1 <= int(word) <= MOST_SEEDS:
        raise ValueError(f"a seed count from 1 to {MOST_SEEDS:,}, got {word!r}")
    return int(word)


def _numbers(word: str, count: int, what: str) -> list[float]:
    try:
        values = [float(v) for v in word.split(",")]
    except ValueError:
        values = []
    if len(values) != count or not all(math.isfinite(v) for v in values):
        raise ValueError(f"{what}: {count} finite number{'s' if count > 1 else ''}, got {word!r}")
    return values


def seed_spec(text: str) -> tuple[str, list[Any]]:
    """The form of a --seeds word and its values: ("uniform", [N]), ("feature", [LOW, HIGH]),
    ("rake", [start, end, N]) or ("npy", [path]); a ValueError says what is wrong."""
    kind, _, rest = text.partition(":")
    if kind == "uniform":
        return kind, [_count(rest)]
    if kind == "feature":
        bounds = rest.split(":")
        if len(bounds) not in (1, 2):
            raise ValueError("expected feature:LOW or feature:LOW:HIGH")
        low = _numbers(bounds[0], 1, "LOW")[0]
        high = _numbers(bounds[1], 1, "HIGH")[0] if len(bounds) == 2 else math.inf
        if not low < high:
            raise ValueError(f"LOW must be below HIGH, got {low:g} and {high:g}")
        return kind, [low, high]
    if kind == "rake":
        parts = rest.split(":")
        if len(parts) != 3:
            raise ValueError("expected rake:X0,Y0,Z0:X1,Y1,Z1:N")
        return kind, [_numbers(parts[0], 3, "a rake's start"), _numbers(parts[1], 3, "a rake's end"), _count(parts[2])]
    if text.endswith(".npy"):
        if not os.path.isfile(text):
            raise ValueError("no such file")
        return "npy", [text]
    raise ValueError(f"expected {_SEEDS_FORMS}")


class Seeds(Bounded[str]):
    """--seeds: one of the forms of :func:`seed_spec`, checked as it is parsed (the points are made
    from the file by :func:`parse_seeds`)."""

    least, most = 1, MOST_SEEDS

    def describe(self) -> str:
        return f"{_SEEDS_FORMS} of (N, 3) points; N from 1 to {MOST_SEEDS:,}"

    def parse(self, text: str) -> str:
        try:
            seed_spec(text)
        except ValueError as why:
            raise argparse.ArgumentTypeError(f"{text!r}: {why}") from None
        return text

    def bad_examples(self) -> list[str]:
        return ["", "bogus", "uniform:0", "uniform:-1", "uniform:abc", f"uniform:{MOST_SEEDS + 1}",
                "uniform:99999999999999999999", "feature:abc", "feature:2:1", "feature:nan", "rake:0,0,0:1,1:4",
                "rake:0,0,0:1,1,1:0", "/nonexistent/seeds.npy"]

    def good_examples(self) -> list[str]:
        return ["uniform:512", "feature:2.5", "feature:1:2", "rake:0,0,0:1,1,1:8"]


# A Hilbert unit in 4 KiB pages: whole 12-byte points, so a multiple of 3 pages.
UNIT_PAGES = Integer(3, 3 << 16, "pages of 4 KiB", multiple_of=3)


def parse_seeds(text: str, file: str, stride: int = 1) -> np.ndarray:
    """The (N, 3) seeds of a --seeds word over the flow container ``file``."""
    try:
        kind, values = seed_spec(text)
    except ValueError as why:
        raise UsageError(f"--seeds {text!r}: {why}") from None
    if kind == "uniform":
        return streamlines.uniform_seeds(file, values[0])
    if kind == "feature":
        seeds = streamlines.feature_seeds(file, *values, stride=stride)
        if len(seeds) == 0:
            raise UsageError(f"--seeds {text!r}: no grid point has a vorticity magnitude in that range")
        return seeds
    if kind == "rake":
        return streamlines.rake_seeds(*values)
    return streamlines.load_seeds(values[0])


def expect_memory_for_lines(seeds: int, steps: int, direction: str) -> None:
    """A usage error when the lines could outgrow this machine's memory (every seed running all its steps):
    the tracer holds every point until the end."""
    halves = 2 if direction == "both" else 1
    most_bytes = seeds * (steps * halves + 1) * 12
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if most_bytes > memory:
        raise UsageError(f"--seeds and --steps: {seeds:,} lines of up to {steps * halves + 1:,} points could hold "
                         f"{most_bytes / 2**30:.1f} GiB, more than this machine's {memory / 2**30:.1f} GiB of memory: "
                         "fewer seeds or steps")
