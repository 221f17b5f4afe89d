"""What headrace writes appears whole or not at all: each file is written as ``NAME.partial`` and
renamed over ``NAME``; a failure (an exception, Ctrl-C) removes the partial file and leaves ``NAME`` as
it was. Results (the rows of a measurement, a study, a trace's statistics) are CSV files written so."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

__all__ = ["replacing", "read_rows", "write_rows"]


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


def read_rows(path: str) -> list[dict[str, str]]:
    """The rows of a results CSV, or none when it does not exist yet (a study resumes from them)."""
    if not os.path.exists(path):
        return []
    with open(path, newline="") as source:
        return list(csv.DictReader(source))


def write_rows(path: str, rows: Sequence[dict[str, object]]) -> None:
    """Writes rows (the union of their columns, in first-seen order) through a temporary file + rename,
    so an interrupted run keeps every finished row."""
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    with replacing(path) as partial, open(partial, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
