"""The ``headrace`` command: one module per subcommand (:data:`COMMANDS`), each with
``register(subparsers, summary)``.

Exit status: 0 success, 1 bad or corrupt data, a failed check or an error of the system (a missing
file, a full disk), 2 usage error (a bad option value, a missing argument), 130 interrupted. Every
error is one line on stderr naming the command, and so is every warning (an iso value outside the data,
say); ``--debug`` adds the traceback and the source location of errors raised in C++, and where a
warning was raised.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
import warnings
from collections.abc import Callable, Collection, Sequence
from typing import TextIO

from headrace import __version__, _gpu_ahead, distributed, errors
from headrace.cli._shared import Parser

__all__ = ["main", "build_parser", "COMMANDS", "SUBCOMMANDS"]

# Every subcommand: the module that fills its parser (``register(subparsers, summary)``) and the line
# ``headrace --help`` shows for it. A command's module loads its workload (renderers, the lab, the
# viewer), so a run imports only the module of the command it names, and ``headrace --help`` none.
COMMANDS: dict[str, tuple[str, str]] = {
    "info": ("headrace.cli.info", "what headrace can use on this machine"),
    "generate": ("headrace.cli.generate", "write a seeded synthetic data set"),
    "convert": ("headrace.cli.convert", "convert particle, grid or AMR files into a container"),
    "compress": ("headrace.cli.compress", "re-write a container through codec chains, named or chosen per field"),
    "export": ("headrace.cli.export", "write a container's frames as VTK files and a ParaView series"),
    "inspect": ("headrace.cli.inspect", "print a container's index"),
    "verify": ("headrace.cli.verify", "check every chunk checksum"),
    "read": ("headrace.cli.read", "read every chunk through one backend and report GB/s"),
    "stream": ("headrace.cli.stream", "stream every frame into GPU or host memory"),
    "trace": ("headrace.cli.trace", "streamlines of a flow container (CPU, out of core)"),
    "render": ("headrace.cli.render",
              "images of frames: points (any point set) as shaded spheres, volumes ray-marched (PNG, animation)"),
    "play": ("headrace.cli.play", "play a volume's frames, showing what each streaming step gains"),
    "view": ("headrace.cli.view", "play, scrub and orbit through time series in the browser"),
    "probe": ("headrace.cli.probe", "measure the raw read bandwidth of a device (the ceiling)"),
    "bench": ("headrace.cli.bench",
             "measure streaming on this machine (particle methods, streamline data managers, MPI scaling)"),
    "tune": ("headrace.cli.tune", "find and store this machine's best streaming configuration"),
    "plot": ("headrace.cli.plot", "draw the figures of a headrace bench results file or a headrace play timeline"),
    "demo": ("headrace.cli.demo", "generate particles, stream them through every backend, compare"),
}
SUBCOMMANDS = tuple(COMMANDS)


def build_parser(full: Collection[str] = SUBCOMMANDS) -> Parser:
    """The command line's parser: the subcommands of ``full`` with their options (every one by default),
    the others by name and summary alone, which is all ``headrace --help`` and an unknown command need."""
    parser = Parser(prog="headrace", description="Stream time-varying scientific data from storage into GPU memory.")
    parser.add_argument("--version", action="version", version=f"headrace {__version__}")
    parser.add_argument("--debug", action="store_true", help="on an error, print its traceback and where in the source it was raised")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, summary) in COMMANDS.items():
        if name in full:
            importlib.import_module(module).register(subparsers, summary)
        else:
            subparsers.add_parser(name, help=summary)
    return parser


def _command_named(argv: Sequence[str]) -> list[str]:
    """The subcommand the words name (the first that is not an option of ``headrace`` itself), if any."""
    word = _gpu_ahead.command_word(argv)
    return [word] if word in COMMANDS else []


def _report(command: str, error: BaseException, debug: bool, note: str = "") -> None:
    if debug:
        traceback.print_exception(error)
        where = getattr(error, "source_location", None)
        if where:
            print(f"raised at {where}", file=sys.stderr)
    text = " ".join(str(error).split("\n")) or type(error).__name__
    print(f"headrace {command}: {text}{note}", file=sys.stderr)


def _hint(args: argparse.Namespace, error: BaseException) -> str:
    """The command line's own hint for what the library says in its terms: the flag that avoids it."""
    if isinstance(error, errors.UnavailableError) and getattr(args, "device", None) not in (None, "cpu"):
        return " (--device cpu runs it on the host)"
    return ""


def _warning_line(command: str) -> Callable[..., None]:
    """What the command shows of a warning (:func:`warnings.showwarning`): one line naming the command, as
    an error is, not Python's two naming a source line."""
    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: TextIO | None = None,
             line: str | None = None) -> None:
        print(f"headrace {command}: {' '.join(str(message).split())}", file=sys.stderr)
    return show


def main(argv: list[str] | None = None) -> int:
    """Runs one command; returns its exit status (a usage error, --help and --version included). Under
    MPI (``mpirun -n N headrace ...``), a rank that fails ends every rank: none waits for it forever."""
    status = _run(argv)
    if status != 0:
        if distributed.launched_by_mpi() and (job := distributed.ranks()).size > 1:
            distributed.abort(status, f"headrace: rank {job.rank} of {job.size} failed (exit {status}); stopping every rank")
    return status


def _run(argv: list[str] | None) -> int:
    try:
        words = sys.argv[1:] if argv is None else argv
        named = _command_named(words)
        if named:  # its GPU's context made while its module loads
            _gpu_ahead.start(named[0], words)
        args = build_parser(named).parse_args(words)
    except SystemExit as stop:  # argparse: a one-line usage error (2), or --help / --version (0)
        return stop.code if isinstance(stop.code, int) else 2
    debug = args.debug or os.environ.get("HEADRACE_DEBUG", "") not in ("", "0", "off")
    try:
        with warnings.catch_warnings():
            if not debug:  # a warning is one line naming the command, as an error is; --debug also says where
                warnings.showwarning = _warning_line(args.command)
            return int(args.func(args) or 0)
    except errors.UsageError as error:
        _report(args.command, error, debug)
        return 2
    except BrokenPipeError:
        # The reader left (`| head`): nothing more to say, and Python must not complain at exit either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"headrace {args.command}: interrupted", file=sys.stderr)
        return 130
    except (errors.Error, OSError, MemoryError) as error:
        _report(args.command, error, debug, _hint(args, error))
        return 1
    except Exception as error:  # a fault of headrace itself: still one line, the traceback under --debug
        _report(args.command, error, debug, f" (a bug in headrace: {type(error).__name__}; "
                                            "rerun with --debug for the traceback and report it)")
        return 1


if __name__ == "__main__":
    sys.exit(main())
