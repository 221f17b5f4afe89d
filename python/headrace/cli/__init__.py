"""The ``headrace`` command line: :mod:`headrace.cli.main` parses and runs a command; :func:`run_command` is what the
``headrace`` script and ``python -m headrace`` call."""

from __future__ import annotations

import sys

__all__ = ["run_command"]


def run_command() -> int:
    """The ``headrace`` script: the GPU the command takes starts making its context before the command line's own
    modules load (rich, argparse, the distributed layer and the command's workload), then the command runs. The
    package started it already as ``import headrace`` began (``_gpu_ahead.start_for_script``, which knows the script
    by the interpreter's words); a caller that set ``sys.argv`` itself (a bench's child) starts it here."""
    from headrace import _gpu_ahead

    _gpu_ahead.start_for(sys.argv[1:])
    from headrace.cli.main import main

    return main()
