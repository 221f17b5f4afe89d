"""Reads every chunk of a container through one read backend, checks it and reports GB/s.

    headrace read FILE --backend B

--cache says what the page cache holds before each repeat: cold (the default) evicts this file's pages
only (posix_fadvise, no privileges needed, nothing else on the machine touched); hot reads the file once
first; drop-all drops the whole machine's page cache (root only: on a shared node it costs every other
job its cache). The output names what was done.
"""

from __future__ import annotations

import argparse

import headrace
from headrace.cli._engine_options import add_option_arguments, given_options
from headrace.cli._output import byte_progress, console, human_bytes, print_json
from headrace.cli._shared import Budget, Integer, Path, Size, add_budget_argument
from headrace.reading import BACKENDS, read_container

# What each --cache state did, in the words of the output.
CACHE_DONE = {
    "cold": "cold: this file evicted from the page cache",
    "hot": "hot: this file read into the page cache first",
    "drop-all": "drop-all: the whole machine's page cache dropped",
}


def register(subparsers: argparse._SubParsersAction, summary: str) -> None:
    parser = subparsers.add_parser("read", help=summary,
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", type=Path(), help="the container to read")
    parser.add_argument("--backend", required=True, choices=BACKENDS, help="the host I/O backend to read through")
    parser.add_argument("--cache", choices=("cold", "hot", "drop-all"), default="cold",
                        help="before each repeat: cold evicts this file from the page cache (default); hot reads it "
                             "in first; drop-all drops the whole machine's page cache (root only)")
    parser.add_argument("--repeats", type=Integer(1, 100), default=1, metavar="N",
                        help="times the file is read; the best and the median are reported (default 1)")
    parser.add_argument("--window-bytes", type=Size(4 << 10, 4 << 30), default=256 << 20, metavar="BYTES",
                        help="bytes of reads in flight, at least one chunk; two windows are held in memory "
                             "(default 256 MiB)")
    parser.add_argument("--no-verify", action="store_true", help="skip checksum checks")
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_budget_argument(parser, "seconds after which no new repeat starts: the repeats done are reported "
                                "(default none)")
    add_option_arguments(parser, queue=False)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    total = headrace.open(args.file).stored_bytes  # the bar refills for each repeat
    budget = Budget(args.budget)
    with byte_progress(f"reading through {args.backend}", total, enabled=not args.json) as update:
        result = read_container(args.file, args.backend, args.cache, args.repeats, args.window_bytes,
                                not args.no_verify, progress=update, go_on=lambda done: not budget.spent(done),
                                **given_options(args, queue=False))
    if len(result.seconds) < args.repeats and not args.json:
        console.print(budget.said(len(result.seconds), args.repeats, "repeats made"))
    described = result.parameters["describe"]
    if args.json:
        print_json({"path": args.file, **result.as_row()})
        return 0
    console.print(f"{args.file}: {human_bytes(result.bytes)} through {described}, {CACHE_DONE[args.cache]} "
                  f"({result.cache_method}), checksums {'checked' if not args.no_verify else 'not checked'}: "
                  f"[bold]{result.best_gbps:.3f} GB/s[/] best of {len(result.seconds)} "
                  f"(median {result.median_gbps:.3f} GB/s)")
    return 0
