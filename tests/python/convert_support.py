"""What the converter tests share: no output left behind, and seeded values of a given type."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def assert_no_output(path: Path) -> None:
    """Neither the output nor its partial file exists: a failed conversion left nothing."""
    assert not path.exists()
    assert not list(path.parent.glob(path.name + ".*")), "a partial file was left behind"


def values(shape, dtype="float32", seed=0) -> np.ndarray:
    """Seeded values from 0 to 100 of ``dtype`` (integers truncated)."""
    return np.random.default_rng(seed).uniform(0, 100, shape).astype(dtype)
