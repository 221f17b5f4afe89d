"""Shared fixtures: small containers written through the public Writer."""

from __future__ import annotations

import os

# Tests make consumer streams wait on fences before the queue has launched its decode kernels. With
# CUDA's lazy module loading, loading those kernels then waits for the blocked consumer: a deadlock
# (docs/engine.md). Eager loading, set before CUDA starts in this process, avoids it.
os.environ.setdefault("CUDA_MODULE_LOADING", "EAGER")

import numpy as np
import pytest

import headrace
from headrace import FieldSpec


@pytest.fixture(autouse=True)
def own_profiles(tmp_path, monkeypatch):
    """Every test has its own tuned-profile and probe files: a profile or a probe on the machine changes
    nothing here, and no test writes the user's."""
    monkeypatch.setenv("HEADRACE_PROFILES", str(tmp_path / "profiles.json"))
    monkeypatch.setenv("HEADRACE_PROBES", str(tmp_path / "probes.json"))


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


def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` need a CUDA GPU and CuPy; elsewhere they skip and say why."""
    from headrace import _ext

    reason = None
    if _ext.gpu_count() == 0:
        reason = f"no GPU: {_ext.gpu_unavailable_reason()}"
    else:
        try:
            import cupy  # noqa: F401
        except ImportError:
            reason = "GPU tests compare with CuPy, which is not installed"
    if reason:
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def codec_files(tmp_path):
    """The same 4 frames x 30000 particles with each codec; returns ({codec: path}, frames)."""
    frames = [particles(30000, t) for t in range(4)]
    frames = [np.round(f, 2) for f in frames]  # compressible
    paths = {}
    for codec in ("none", "lz4", "zstd", "gdeflate"):
        path = tmp_path / f"{codec}.hrc"
        with headrace.Writer(path, [FieldSpec("particles", "float32", 8)], chunk_size_bytes=64 << 10, codec=codec) as w:
            for t, data in enumerate(frames):
                w.write(w.add_frame(time=float(t)), "particles", data)
        paths[codec] = path
    return paths, frames
