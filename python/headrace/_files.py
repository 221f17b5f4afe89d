"""What headrace writes appears whole or not at all: each file is written as ``NAME.partial`` and
renamed over ``NAME``; a failure (an exception, Ctrl-C) removes the partial file and leaves ``NAME`` as
it was."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["replacing"]


@contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[str]:
    """Yields ``path.partial`` to write; renames it over ``path`` when the block ends, removes it otherwise."""
    partial = f"{os.fspath(path)}.partial"
    try:
        yield partial
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
