"""``render``'s options of a point set: its radius and colour, each a value or a field of the file, or a
colour by a field's values."""

from __future__ import annotations

import argparse
import math
import re
from typing import Any

from headrace.cli._shared import Bounded
from headrace.cli._view_options import finite_numbers

__all__ = ["FIELD_NAME", "RadiusOption", "ColourOption", "ColourSource", "given_point_options"]

FIELD_NAME = r"[A-Za-z_][A-Za-z0-9_.-]{0,63}"  # a field named on the command line (a number is a value)


class RadiusOption(Bounded[object]):
    """--radius: a number above 0 (every point's radius) or the name of a field of one number a point."""

    least = most = None

    def describe(self) -> str:
        return "a number above 0, in the positions' units, or a field of one number a point"

    def parse(self, text: str) -> float | str:
        try:
            value = float(text)
        except ValueError:
            if re.fullmatch(FIELD_NAME, text) is None:
                raise self.fail(text) from None
            return text
        if not (math.isfinite(value) and value > 0):
            raise self.fail(text)
        return value

    def bad_examples(self) -> list[str]:
        return ["", "0", "-1", "nan", "inf", "bad name!"]

    def good_examples(self) -> list[str]:
        return ["0.01", "radius", "r_1"]


class ColourOption(Bounded[object]):
    """--colour: ``R,G,B`` or ``R,G,B,A`` (each 0 to 1; every point's colour) or an RGB or RGBA field's name."""

    least, most = 0, 1

    def describe(self) -> str:
        return "R,G,B or R,G,B,A, each from 0 to 1, or a field of 3 or 4 numbers a point (RGB, RGBA)"

    def parse(self, text: str) -> tuple[float, ...] | str:
        if re.fullmatch(FIELD_NAME, text):
            return text
        try:
            values = finite_numbers(text.split(","))
        except ValueError:
            raise self.fail(text) from None
        if len(values) not in (3, 4) or not all(0 <= v <= 1 for v in values):
            raise self.fail(text)
        return tuple(values)

    def bad_examples(self) -> list[str]:
        return ["", "1,0", "2,0,0", "-1", "0,0,nan", "1,1,1,1,1", "bad name!"]

    def good_examples(self) -> list[str]:
        return ["1,0.5,0", "0,0,1,0.5", "rgba"]


class ColourSource(Bounded[str]):
    """--colour-by: ``FIELD`` (one number a point), ``FIELD:K`` (component K) or ``FIELD:magnitude``."""

    least = most = None

    def describe(self) -> str:
        return "FIELD, FIELD:K (its component K, from 0) or FIELD:magnitude (its vectors' length)"

    def parse(self, text: str) -> str:
        if re.fullmatch(r"[A-Za-z0-9_.-]{1,64}(:(\d{1,3}|magnitude))?", text) is None:
            raise self.fail(text)
        return text

    def bad_examples(self) -> list[str]:
        return ["", "v:", "v:x", "v:-1", "a b", ":1"]

    def good_examples(self) -> list[str]:
        return ["temperature", "velocity:1", "velocity:magnitude"]


def given_point_options(args: argparse.Namespace) -> dict[str, Any]:
    """The point-set options given, as :class:`headrace.workloads.points.PointSetRenderer` takes them."""
    given = {"positions": args.positions, "radius": args.radius, "colour": args.colour, "colour_by": args.colour_by,
             "colour_map": args.colour_map, "colour_range": args.colour_range}
    return {name: value for name, value in given.items() if value is not None}
