"""Writes a container's frames as VTK files ParaView opens, with a .pvd that names them as a time series.

    headrace export FILE --to vtk OUT/

Grids (volumes, flow fields in any layout) become one .vti per frame (every field as point data on the
grid's points, with the container's origin and spacing); AMR (headrace generate amr, converted AMReX
plotfiles) one .vthb per frame, VTK's overlapping AMR (each brick a block of its level, with the level's
spacing and refinement ratio, every field as cell data; the blocks' .vti files in the folder NAME_0007/
beside NAME_0007.vthb); particles one .vtp per frame (positions as points with vertex cells, the other
fields as point data; the x8 particles record's radius and colour as arrays 'radius' and 'colour').
OUT/NAME.pvd names the files with each frame's time: ParaView opens it as a time series.

The files are written with vtk's XML writers (raw binary appended data; --compression compresses it)
into a hidden folder beside OUT and moved into OUT once all are written: a failed or interrupted export
leaves nothing. OUT must not exist or be empty; --force writes into a folder holding files, replacing
those of the same names (a frame's block folder whole). vtk writes a file whole: one frame of the
exported fields is in memory at a time.
"""

from __future__ import annotations

import argparse
import re
import time
from typing import Union

from headrace.cli._output import console, count_progress, print_json
from headrace.cli._shared import Bounded, Items, Name, Path
from headrace.cli._writer_options import terminate_as_exit
from headrace.export import Compression, to_vtk

__all__ = ["register", "run", "FrameRange"]


class FrameRange(Bounded[Union[int, slice]]):
    """A frame index ``N`` or a range ``A:B`` (B excluded, either end may be left out); negative numbers
    count from the end (``-1`` the last frame, ``-4:`` the last four)."""

    least, most = -(1 << 31), (1 << 31) - 1

    def describe(self) -> str:
        return (f"a frame N or a range A:B (B excluded, either may be left out), numbers from {self.least:,} to "
                f"{self.most:,}, negative ones counting from the end")

    def parse(self, text: str) -> int | slice:
        single = re.fullmatch(r"\s*(-?\d+)\s*", text)
        span = re.fullmatch(r"\s*(-?\d+)?\s*:\s*(-?\d+)?\s*", text)
        if single is None and span is None:
            raise self.fail(text)
        words = single.groups() if single is not None else span.groups()  # type: ignore[union-attr]
        numbers = [None if word is None else int(word) for word in words]
        if any(n is not None and not self.least <= n <= self.most for n in numbers):
            raise self.fail(text)
        return numbers[0] if single is not None else slice(*numbers)  # type: ignore[return-value]

    def bad_examples(self) -> list[str]:
        return ["", "abc", "1.5", "1:2:3", "a:b", "1-2", str(self.most + 1), f"{self.least - 1}:"]

    def good_examples(self) -> list[str]:
        return ["0:8", "-1", ":", "3:", ":-2", "5"]


def register(subparsers: argparse._SubParsersAction, summary: str) -> None:
    parser = subparsers.add_parser("export", help=summary,
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", type=Path(), help="the container to export")
    parser.add_argument("--to", required=True, choices=("vtk",),
                        help="the files to write: vtk (.vti for grids, .vthb for AMR, .vtp for particles, and a .pvd "
                             "series)")
    parser.add_argument("output", metavar="OUT", type=Path(),
                        help="folder to write into (made if missing; one holding files needs --force)")
    parser.add_argument("--frames", type=FrameRange(), metavar="A:B",
                        help="the frames to export (default all): 0:8, 5, -1 for the last; write a range that starts "
                             "with '-' as --frames=-4:")
    parser.add_argument("--fields", type=Items(Name(255)), metavar="NAMES",
                        help="comma-separated fields to export (default all; a particle container's positions always)")
    parser.add_argument("--compression", choices=tuple(c.value for c in Compression), default="none",
                        help="how vtk stores the data: none (raw binary, the default), zlib, lz4 or lzma")
    parser.add_argument("--force", action="store_true", help="write into an OUT that holds files, replacing "
                                                             "files (and frames' block folders) of the same names")
    parser.add_argument("--json", action="store_true", help="print a JSON summary")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    with terminate_as_exit(), count_progress("exporting frames", 0, enabled=not args.json) as advance:
        result = to_vtk(args.file, args.output, frames=args.frames, fields=args.fields,
                        compression=args.compression, force=args.force,
                        progress=lambda done, total: advance(1, total))
    seconds = time.perf_counter() - started
    if args.json:
        print_json({"input": args.file, "output": args.output, "series": str(result.series), "kind": result.kind,
                    "frames": result.frames, "fields": result.fields, "files": [str(p) for p in result.files],
                    "compression": args.compression, "seconds": round(seconds, 3)})
        return 0
    console.print(f"wrote {len(result.files)} frames of {', '.join(result.fields)} as .{result.kind} to "
                  f"{args.output} in {seconds:.2f} s; ParaView opens [bold]{result.series}[/] as a time series",
                  soft_wrap=True)
    return 0
