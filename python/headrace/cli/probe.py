"""``headrace probe PATH``: raw read bandwidth over block size x queue depth x threads, and the device ceiling.

PATH is a file or block device (read as it is), a directory (headrace-probe.bin is written there once
and reused) or a file to create. Cold means O_DIRECT: the page cache is bypassed. See docs/probe.md.
"""

from __future__ import annotations

import argparse

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from headrace import probe as probe_api
from headrace.cli._arguments import parse_size
from headrace.cli._output import console, human_bytes, print_json
from headrace.errors import UsageError

__all__ = ["register", "run"]

def _size_list(text: str) -> list[int]:
    return [parse_size(item) for item in text.split(",")]


def _int_list(text: str) -> list[int]:
    try:
        return [int(item) for item in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated integers") from None


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("probe", help="measure the raw read bandwidth of a device (the ceiling)",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", metavar="PATH", help="file, block device or directory on the device to probe")
    parser.add_argument("--quick", action="store_true",
                        help="smaller grid: 4 KiB, 128 KiB, 1 MiB x QD 1, 16, 32 x 1, 4 threads; 256 MiB file")
    parser.add_argument("--csv", metavar="OUT.csv", help="write every point as CSV")
    parser.add_argument("--png", metavar="OUT.png", help="draw the bandwidth heat maps")
    parser.add_argument("--json", action="store_true", help="print JSON (progress goes to stderr)")
    parser.add_argument("--size", type=parse_size, metavar="BYTES",
                        help="size of the test file written for a directory or a missing PATH "
                             "(default 4 GiB, --quick 256 MiB)")
    parser.add_argument("--seconds", type=float, metavar="S", help="time per point (default 0.25, --quick 0.1)")
    parser.add_argument("--bytes-per-point", type=parse_size, metavar="BYTES",
                        help="read exactly this much per point instead of timing it")
    parser.add_argument("--block-sizes", type=_size_list, metavar="LIST", help="e.g. 4K,128K,1M")
    parser.add_argument("--queue-depths", type=_int_list, metavar="LIST", help="e.g. 1,16,64")
    parser.add_argument("--threads", type=_int_list, metavar="LIST", help="e.g. 1,4")
    parser.add_argument("--patterns", type=lambda text: text.split(","), metavar="LIST",
                        help="sequential,random (default both)")
    parser.add_argument("--seed", type=int, help="seed of the test file and the random offsets (default 1)")
    parser.add_argument("--strict", action="store_true",
                        help="fail instead of falling back (no io_uring, no O_DIRECT, a file in RAM)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.seconds is not None and args.seconds <= 0:
        raise UsageError(f"--seconds must be > 0, got {args.seconds}")
    status_console = console if not args.json else _stderr_console()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[last]}"), console=status_console, transient=True) as progress:
        task = progress.add_task("probe", total=None, last="writing or checking the test file")

        def report(done: int, total: int, point: probe_api.ProbePoint) -> None:
            progress.update(task, completed=done, total=total,
                            last=f"{point.describe()}: {point.gigabytes_per_second:.2f} GB/s")

        result = probe_api.probe(
            args.path, quick=args.quick, file_size_bytes=args.size, patterns=args.patterns,
            block_sizes_bytes=args.block_sizes, queue_depths=args.queue_depths, thread_counts=args.threads,
            seconds_per_point=args.seconds, bytes_per_point=args.bytes_per_point, seed=args.seed, strict=args.strict, progress=report)
    if args.csv:
        result.to_csv(args.csv)
    if args.png:
        result.plot_heatmap(args.png)
    if args.json:
        print_json(result.as_dict())
        return 0
    _print_report(result)
    if args.csv:
        console.print(f"wrote {args.csv}")
    if args.png:
        console.print(f"wrote {args.png}")
    console.print(result.ceiling_line(), soft_wrap=True)
    return 0


def _stderr_console():
    from rich.console import Console

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
