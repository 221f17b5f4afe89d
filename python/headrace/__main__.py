"""``python -m headrace``: the same as the ``headrace`` command."""

import sys

from headrace.cli import run_command

sys.exit(run_command())
