"""``--budget SECONDS``: long work stops starting new steps once the budget is spent. The step under
way finishes and at least one step always runs, so a run makes progress whatever the budget."""

from __future__ import annotations

import argparse
import time

from headrace.cli._arguments import Real

MOST_BUDGET_SECONDS = 7 * 24 * 3600  # a week at most


def add_budget_argument(parser: argparse.ArgumentParser, help: str, default: float | None = None) -> None:
    parser.add_argument("--budget", type=Real(0, MOST_BUDGET_SECONDS, "seconds", above=True), default=default, help=help)


class Budget:
    """Seconds from now, or none (``seconds=None``: never spent)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.started = time.monotonic()

    def spent(self, steps_done: int) -> bool:
        """True once the budget is over and a step was done: the caller starts no new one."""
        return self.seconds is not None and steps_done > 0 and time.monotonic() - self.started > self.seconds

    def said(self, done: int, total: int, what: str) -> str:
        return f"budget of {self.seconds:g} s spent: {done} of {total} {what}"
