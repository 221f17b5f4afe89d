"""Shared fixtures: small containers written through the public Writer."""

from __future__ import annotations

import numpy as np
import pytest

import headrace
from headrace import FieldSpec


def particles(count: int, frame: int) -> np.ndarray:
    """Deterministic particles of one frame (values differ per frame)."""
    rng = np.random.default_rng(1000 + frame)
    return rng.random((count, 8), dtype=np.float32)


@pytest.fixture
def particle_file(tmp_path):
    """3 frames x 5000 particles, 16 KiB chunks, uncompressed; returns (path, list of frame arrays)."""
    path = tmp_path / "particles.hrc"
    frames = [particles(5000, t) for t in range(3)]
    with headrace.Writer(path, [FieldSpec("particles", "float32", 8)], chunk_size_bytes=16384) as w:
        w.set_attribute("source_format", "test")
        for t, data in enumerate(frames):
            w.write(w.add_frame(time=0.5 * t, bbox=((0, 0, 0), (1, 1, 1))), "particles", data)
    return path, frames
