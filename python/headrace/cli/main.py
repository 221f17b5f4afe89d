"""The ``headrace`` command: one module per subcommand, each with ``register(subparsers)``.

Exit status: 0 success, 1 bad or corrupt data (or a failed check), 2 usage error.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from headrace import errors

__all__ = ["main", "SUBCOMMANDS"]

SUBCOMMANDS = ("info", "generate", "convert", "inspect", "verify", "read", "stream", "trace", "render", "probe", "bench", "tune", "plot",
               "demo")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="headrace",
        description="Stream time-varying scientific data from storage into GPU memory.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"headrace.cli.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except errors.UsageError as error:
        print(f"headrace {args.command}: {error}", file=sys.stderr)
        return 2
    except (errors.BadDataError, errors.SystemError, errors.UnavailableError, FileNotFoundError, errors.Error) as error:
        print(f"headrace {args.command}: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
