"""Shared output helpers of the CLI: JSON, sizes, rich console and progress."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from typing import Any, Iterator

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

__all__ = ["console", "print_json", "human_bytes", "byte_progress", "count_progress"]

# Piped or redirected, lines are not wrapped at 80 columns (a path or a number split over two lines
# breaks whoever reads them) and tables are as wide as they need.
_piped = not sys.stdout.isatty()
console = Console(highlight=False, soft_wrap=_piped, width=1000 if _piped else None)


def _reader_left() -> None:
    # rich exits 1 itself when the reader leaves (`| head`); main() ends such a run quietly with 0.
    raise BrokenPipeError


console.on_broken_pipe = _reader_left  # type: ignore[method-assign]


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def human_bytes(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.2f} {unit}"
        size /= 1024
    return f"{size} B"


@contextmanager
def count_progress(description: str, total: int, enabled: bool = True) -> Iterator[Any]:
    """A rich progress bar over a count of steps; yields advance(steps=1, total=None) (a total given
    replaces the one known so far). Hidden when output is not a terminal."""
    if not enabled or not console.is_terminal:
        yield lambda steps=1, total=None: None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task(description, total=total or None)
        yield lambda steps=1, total=None: progress.update(task, advance=steps, total=total or progress.tasks[0].total)


@contextmanager
def byte_progress(description: str, total: int, enabled: bool = True) -> Iterator[Any]:
    """A rich progress bar over bytes; yields update(done_bytes, total_bytes=None). Hidden when output is
    not a terminal."""
    if not enabled or not console.is_terminal:
        yield lambda done, total=None: None
        return
    with Progress(
        TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
        console=console, transient=True,
    ) as progress:
        task = progress.add_task(description, total=total)
        yield lambda done, total=None: progress.update(task, completed=done, total=total or progress.tasks[0].total)
