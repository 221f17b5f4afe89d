"""The options of the volume renderer that ``headrace render`` (on a volume) and ``headrace play`` share."""

from __future__ import annotations

import argparse
import math
from typing import Any

from headrace.cli._shared import Bounded, Name, Real
from headrace.errors import UsageError
from headrace.workloads.volume import parse_opacity

__all__ = ["Opacity", "ValueRange", "add_volume_arguments", "volume_options", "volume_only_options"]


class Opacity(Bounded[str]):
    """--opacity: ``ramp:A,B,MAX`` (fractions of the value range, 0 <= A < B <= 1, 0 < MAX <= 1) or ``flat:MAX``."""

    least = most = None

    def describe(self) -> str:
        return "ramp:A,B,MAX (transparent below fraction A of the range, MAX from fraction B; 0 <= A < B <= 1, " \
               "0 < MAX <= 1) or flat:MAX"

    def parse(self, text: str) -> str:
        try:
            parse_opacity(text)
        except UsageError:
            raise self.fail(text) from None
        return text

    def bad_examples(self) -> list[str]:
        return ["", "ramp", "ramp:0.5,0.2,1", "ramp:0,1,0", "flat:2", "flat:nan", "cone:1"]

    def good_examples(self) -> list[str]:
        return ["ramp:0.1,1,0.2", "flat:0.05"]


class ValueRange(Bounded[tuple]):
    """--range: ``LO:HI``, finite numbers with LO below HI."""

    least = most = None

    def describe(self) -> str:
        return "LO:HI, finite numbers, LO below HI"

    def parse(self, text: str) -> tuple[float, float]:
        lo, colon, hi = text.partition(":")
        try:
            values = float(lo), float(hi)
        except ValueError:
            raise self.fail(text) from None
        if not colon or not all(math.isfinite(v) for v in values) or not values[0] < values[1]:
            raise self.fail(text)
        return values

    def bad_examples(self) -> list[str]:
        return ["", "1", "1:0", "a:b", "0:inf", "nan:1"]

    def good_examples(self) -> list[str]:
        return ["0:1", "-2.5:3e3"]


def add_volume_arguments(parser: argparse.ArgumentParser) -> None:
    """The volume options; --field, --camera, --width, --height, --fov, --background, --device, --threads are
    the caller's."""
    volume = parser.add_argument_group("volumes (a grid or AMR field)")
    volume.add_argument("--mode", choices=("dvr", "iso"), default=None,
                        help="direct volume rendering or the first iso-surface (default dvr; iso when --iso is given)")
    volume.add_argument("--tf", type=Name(), default=None, help="a matplotlib colour map (default viridis)")
    volume.add_argument("--opacity", type=Opacity(), default=None,
                        help="opacity over the value range, per half level-0 cell of ray (default ramp:0.1,1,0.2)")
    volume.add_argument("--range", type=ValueRange(), default=None,
                        help="the values the colour map spans (default: the field's range over every frame, "
                             "from the index: fixed across frames)")
    volume.add_argument("--iso", type=Real(-3.0e38, 3.0e38, "a value"), default=None,
                        help="the iso value to draw (--mode iso; default: the middle of the range); a value outside "
                             "the field's values draws no surface and is said on stderr")
    volume.add_argument("--sampling", type=Real(0, 64, "samples per cell", above=True), default=None,
                        help="samples per finest cell of each region along a ray (default 1)")
    volume.add_argument("--footprint", type=Real(0, 64, "pixel footprints"), default=None,
                        help="no step shorter than this many pixel footprints at the sample's distance: cells "
                             "finer than a pixel are not sampled more finely along the ray (default 0: off)")
    volume.add_argument("--no-skip", action="store_true",
                        help="draw every region that has cells (to measure what empty-space skipping saves)")


def volume_options(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments of :class:`headrace.workloads.volume.VolumeRenderer` from the options given: ``--iso`` alone
    draws the iso-surface, ``--iso`` with ``--mode dvr`` is a usage error (it would draw nothing of it)."""
    mode = args.mode or ("iso" if args.iso is not None else "dvr")
    if mode != "iso" and args.iso is not None:
        raise UsageError(f"--iso {args.iso:g}: an iso value is drawn by --mode iso, not --mode {mode} (leave --mode "
                         "out or give --mode iso)")
    options: dict[str, Any] = dict(mode=mode, tf=args.tf or "viridis",
                                   opacity=args.opacity or "ramp:0.1,1,0.2", value_range=args.range, iso=args.iso,
                                   sampling=args.sampling or 1.0, skip_empty=not args.no_skip, field=args.field,
                                   footprint=args.footprint or 0.0,
                                   width=args.width, height=args.height, fov=args.fov, camera=args.camera,
                                   background=args.background, threads=args.threads)
    return options


def volume_only_options(args: argparse.Namespace) -> list[str]:
    """The volume options given (a particle file refuses them)."""
    given = [("--mode", args.mode), ("--tf", args.tf), ("--opacity", args.opacity), ("--range", args.range),
             ("--iso", args.iso), ("--sampling", args.sampling),
             ("--footprint", args.footprint)]
    return [name for name, value in given if value is not None] + (["--no-skip"] if args.no_skip else [])
