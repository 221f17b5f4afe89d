"""Reads every chunk of a container and checks its checksum; exits 0 only if all match."""

from __future__ import annotations

import argparse

import headrace
from headrace import _ext
from headrace.cli._output import byte_progress, console, print_json
from headrace.cli._shared import Path
from headrace.reading import BACKENDS


def register(subparsers: argparse._SubParsersAction, summary: str) -> None:
    parser = subparsers.add_parser("verify", help=summary, description=__doc__)
    parser.add_argument("file", type=Path(), help="the container to check")
    parser.add_argument("--backend", default="posix", choices=BACKENDS,
                        help="host I/O backend to read with (default: posix)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ds = headrace.open(args.file)
    with byte_progress("verifying", ds.stored_bytes, enabled=not args.json) as update:
        report = _ext.scan_chunks(ds.container, ds.backend(args.backend), verify=True, progress=update)
    if args.json:
        print_json({"path": ds.path, "ok": True, **report})
    else:
        console.print(f"{ds.path}: [green]ok[/]: {report['chunks']} chunks, {report['stored_bytes']} stored bytes, "
                      "every checksum matches")
    return 0
