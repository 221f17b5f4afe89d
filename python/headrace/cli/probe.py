"""Measures how fast a drive can be read: the raw read bandwidth over block size x queue depth x
threads, and the device ceiling (the most any reader gets from it).

    headrace probe PATH

PATH is an existing file or block device (read as it is, never written), an existing folder
(headrace-probe.bin is written there once and reused), or a new file to write, named with an ending
such as probe.bin, in a folder that exists. A missing PATH without an ending (/mnt/nvme when that
drive is not mounted) is refused rather than written as a file on whatever disk holds its folder.
Cold means O_DIRECT: the page cache is bypassed. After the grid, one cold pass of buffered reads with the
kernel reading ahead (the route of buffered readers such as KvikIO's POSIX mode). The result is kept per file
system ($HEADRACE_PROBES, else ~/.config/headrace/probes.json), where `headrace info FILE` finds it. See
docs/probe.md.
"""

from __future__ import annotations

import argparse
import os
import stat
from dataclasses import asdict

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from headrace import probe as probe_api
from headrace import routes
from headrace.cli._output import console, human_bytes, print_json
from headrace.cli._shared import (
    Bounded,
    Budget,
    ImageFile,
    Integer,
    Items,
    OutputFile,
    Real,
    Size,
    Word,
    add_budget_argument,
    describe_size,
)
from headrace.errors import UsageError

__all__ = ["register", "run"]


class ProbePath(Bounded[str]):
    """What ``probe`` reads: an existing file, block device or folder, or a new file with an ending in an
    existing folder."""

    least = most = None

    def describe(self) -> str:
        return ("an existing file, block device or folder, or a new file with an ending (probe.bin) in an "
                "existing folder")

    def parse(self, text: str) -> str:
        if not text or "\0" in text:
            raise self.fail(text)
        if os.path.exists(text):
            return text
        folder = os.path.dirname(text.rstrip(os.sep)) or "."
        if text.endswith(os.sep) or not os.path.splitext(text)[1]:
            raise argparse.ArgumentTypeError(
                f"{text} does not exist (a folder or drive that is not mounted?); the test file is written only into "
                f"an existing folder, or as a new file with an ending such as {text.rstrip(os.sep)}.bin")
        if not os.path.isdir(folder):
            raise argparse.ArgumentTypeError(f"{text}: {folder} is not an existing folder")
        return text

    def bad_examples(self) -> list[str]:
        return ["", "/nonexistent-folder/probe.bin", "/nonexistent-drive"]

    def good_examples(self) -> list[str]:
        return [".", "probe.bin"]


# The largest block fits the probe's 1 GiB of destination buffers (buffer_limit_bytes, probe/config.hpp).
BLOCK_SIZES = Items(Size(4096, 1 << 30, multiple_of=4096))
QUEUE_DEPTHS = Items(Integer(1, 4096))  # probe/config.cpp's ranges
THREAD_COUNTS = Items(Integer(1, 1024))


def register(subparsers: argparse._SubParsersAction, summary: str) -> None:
    parser = subparsers.add_parser("probe", help=summary,
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", metavar="PATH", type=ProbePath(), help="what to read, on the device to probe")
    parser.add_argument("--quick", action="store_true",
                        help="smaller grid: 4 KiB, 128 KiB, 1 MiB x QD 1, 16, 32 x 1, 4 threads; 256 MiB file")
    parser.add_argument("--csv", metavar="OUT.csv", type=OutputFile(), help="write every point as CSV")
    parser.add_argument("--png", metavar="OUT.png", type=ImageFile(),
                        help="draw the bandwidth heat maps, in the format the ending names")
    parser.add_argument("--json", action="store_true", help="print JSON (progress goes to stderr)")
    add_budget_argument(parser, "seconds after which no new point starts: the points measured are reported "
                                "and saved (default none)")
    parser.add_argument("--size", type=Size(4096, 1 << 40), metavar="BYTES",
                        help="size of the test file written for a folder or a new file "
                             "(default 4 GiB, --quick 256 MiB)")
    parser.add_argument("--seconds", type=Real(0.0, 60.0, "seconds", above=True), metavar="S",
                        help="time per point (default 0.25, --quick 0.1)")
    parser.add_argument("--bytes-per-point", type=Size(4096, 64 << 30), metavar="BYTES",
                        help="read exactly this much per point instead of timing it")
    parser.add_argument("--block-sizes", type=BLOCK_SIZES, metavar="LIST", help="block sizes to read, e.g. 4K,128K,1M")
    parser.add_argument("--queue-depths", type=QUEUE_DEPTHS, metavar="LIST",
                        help="reads in flight per thread, e.g. 1,16,64")
    parser.add_argument("--threads", type=THREAD_COUNTS, metavar="LIST", help="reading threads, e.g. 1,4")
    parser.add_argument("--patterns", type=Items(Word(("sequential", "random")), most_items=2), metavar="LIST",
                        help="access patterns (default both)")
    parser.add_argument("--seed", type=Integer(0, (1 << 32) - 1),
                        help="seed of the test file and the random offsets (default 1)")
    parser.add_argument("--strict", action="store_true",
                        help="fail instead of falling back (no io_uring, no O_DIRECT, a file in RAM)")
    parser.set_defaults(func=run)


def _check_grid(args: argparse.Namespace) -> None:
    """What the options say together: no value twice in a list, and a test file that holds one block per
    thread (probe/run.cpp), checked before the file is written."""
    for flag, values in (("--block-sizes", args.block_sizes), ("--queue-depths", args.queue_depths),
                         ("--threads", args.threads), ("--patterns", args.patterns)):
        if values is not None and len(set(values)) != len(values):
            raise UsageError(f"{flag} lists a value twice")
    defaults = probe_api.defaults(args.quick)
    if os.path.exists(args.path) and not os.path.isdir(args.path):
        if not stat.S_ISREG(os.stat(args.path).st_mode):
            return  # a block device: its size is the C++ core's to find
        size, named = os.path.getsize(args.path), args.path
    else:
        size = args.size or defaults["file_size_bytes"]
        named = f"--size {describe_size(args.size)}" if args.size else f"the test file ({describe_size(size)})"
    block = max(args.block_sizes or defaults["block_sizes_bytes"])
    threads = max(args.threads or defaults["thread_counts"])
    if size < block * threads:
        raise UsageError(f"{named} holds {size:,} bytes; {threads} threads of {block:,}-byte blocks need "
                         f"{block * threads:,} (a larger --size, or smaller --block-sizes or --threads)")


def run(args: argparse.Namespace) -> int:
    _check_grid(args)
    status_console = console if not args.json else _stderr_console()
    budget, grid = Budget(args.budget), [0]
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TimeRemainingColumn(), TextColumn("{task.fields[last]}"), console=status_console,
                  transient=True) as progress:
        task = progress.add_task("probe", total=None, last="writing or checking the test file")

        def report(done: int, total: int, point: probe_api.ProbePoint) -> bool:
            progress.update(task, completed=done, total=total,
                            last=f"{point.describe()}: {point.gigabytes_per_second:.2f} GB/s")
            grid[0] = total
            return not budget.spent(done)

        result = probe_api.probe(
            args.path, quick=args.quick, file_size_bytes=args.size, patterns=args.patterns,
            block_sizes_bytes=args.block_sizes, queue_depths=args.queue_depths, thread_counts=args.threads,
            seconds_per_point=args.seconds, bytes_per_point=args.bytes_per_point, seed=args.seed, strict=args.strict,
            progress=report)
    if len(result.points) < grid[0]:
        status_console.print(budget.said(len(result.points), grid[0], "points measured"))
    if args.csv:
        result.to_csv(args.csv)
    if args.png:
        result.plot_heatmap(args.png)
    # The engine's own cold routes on this file system, which cache_policy auto chooses between (a cold
    # grid only: a file system in RAM has no cold route to choose).
    engine = routes.measure_engine_routes(result.file) if result.read_ahead is not None and os.path.isfile(result.file) else None
    kept = probe_api.keep(result, engine) if result.points else None
    if args.json:
        print_json({**result.as_dict(), "engine_routes": None if engine is None else asdict(engine),
                    "kept_in": None if kept is None else str(kept)})
        return 0
    _print_report(result)
    if args.csv:
        console.print(f"wrote {args.csv}")
    if args.png:
        console.print(f"wrote {args.png}")
    if result.read_ahead is not None:
        console.print(result.read_ahead.describe(), soft_wrap=True)
    if engine is not None:
        console.print(engine.describe(), soft_wrap=True)
    if kept is not None:
        where = probe_api.file_system_of(result.file)
        console.print(f"kept for {where['mount'] or where['key']} in {kept} (headrace info FILE names each route's rate "
                      "from it)", soft_wrap=True)
    console.print(result.ceiling_line(), soft_wrap=True)
    return 0


def _stderr_console():
    return Console(stderr=True, highlight=False)


def _print_report(result: probe_api.ProbeResult) -> None:
    first = result.points[0]
    how = "written by this probe" if result.created else "existing file, reused"
    bypassed = " (the page cache is bypassed)" if first.cache_state == "cold" else ""
    console.print(f"{result.file} ({how}): read through {first.path}, {result.cache_description}{bypassed}",
                  soft_wrap=True)
    if first.note:
        console.print(f"[yellow]note[/]: {first.note}", soft_wrap=True)
    depths = sorted({point.queue_depth for point in result.points})
    table = Table(title="GB/s (1e9 bytes/s) by queue depth per thread")
    for name in ("pattern", "threads", "block"):
        table.add_column(name)
    for depth in depths:
        table.add_column(f"QD {depth}", justify="right")
    ceiling = result.ceiling
    rows: dict[tuple[str, int, int], dict[int, str]] = {}
    for point in result.points:
        cell = f"{point.gigabytes_per_second:.2f}"
        if point is ceiling:
            cell = f"[bold red]{cell}[/]"
        rows.setdefault((point.pattern, point.threads, point.block_size_bytes), {})[point.queue_depth] = cell
    keys = sorted(rows, key=lambda key: (key[0] != "sequential", key[1], key[2]))
    for index, (pattern, threads, block) in enumerate(keys):
        last_of_pattern = index + 1 == len(keys) or keys[index + 1][0] != pattern
        table.add_row(pattern, str(threads), probe_api.format_block_size(block),
                      *(rows[pattern, threads, block].get(depth, "") for depth in depths),
                      end_section=last_of_pattern)
    console.print(table)
    total = sum(point.bytes for point in result.points)
    console.print(f"{len(result.points)} points, {human_bytes(total)} read in "
                  f"{sum(point.seconds for point in result.points):.1f} s of measurement")
