"""``python -m headrace``: the same as the ``headrace`` command."""

import sys

from headrace.cli.main import main

sys.exit(main())
