"""``headrace read FILE --backend B``: reads every chunk through B, checks it, reports GB/s."""

from __future__ import annotations

import argparse

import headrace
from headrace.bench.cases.read_backends import read_container
from headrace.cli._options import add_option_arguments, given_options
from headrace.cli._output import byte_progress, console, human_bytes, print_json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("read", help="read every chunk through one backend and report GB/s",
                                   description=__doc__)
    parser.add_argument("file")
    parser.add_argument("--backend", required=True, choices=("posix", "direct", "mmap", "uring", "ram"))
    parser.add_argument("--cache", choices=("cold", "hot"), default="cold",
                        help="cold: evict the file from the page cache before each repeat (default); hot: preread it")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--window-bytes", type=int, default=256 << 20, help="bytes of reads in flight (default 256 MiB)")
    parser.add_argument("--no-verify", action="store_true", help="skip checksum checks")
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_option_arguments(parser, queue=False)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    total = headrace.open(args.file).stored_bytes  # the bar refills for each repeat
    with byte_progress(f"reading through {args.backend}", total, enabled=not args.json) as update:
        result = read_container(args.file, args.backend, args.cache, args.repeats, args.window_bytes,
                                not args.no_verify, progress=update, **given_options(args, queue=False))
    described = result.parameters["describe"]
    if args.json:
        print_json({"path": args.file, **result.as_row()})
        return 0
    console.print(f"{args.file}: {human_bytes(result.bytes)} through {described}, {args.cache} "
                  f"({result.cache_method}), checksums {'checked' if not args.no_verify else 'not checked'}: "
                  f"[bold]{result.best_gbps:.3f} GB/s[/] best of {len(result.seconds)} "
                  f"(median {result.median_gbps:.3f} GB/s)")
    return 0
