"""The synthetic particle series of seed ``000_…`` (section 4.2).

N particles, 8 float32 each (x, y, z, radius, r, g, b, a): positions uniform in the unit box [0, 1)^3,
one radius for all chosen so that the spheres' total volume is a third of the box
(``N * 4/3 * pi * r^3 = 1/3``), colours uniform in [0, 1), alpha 1. Every frame repeats the same particles
(the seed paper wrote them four times "to simulate multiple frames the application must seek to"); frame
``f`` has time ``f`` and the unit box as its bounding box.

Particles are drawn from ``numpy.random.default_rng(seed)`` in slices of :data:`SLICE_PARTICLES` (per
slice: positions, then colours), and the generator is re-seeded for every frame, so memory stays at one
slice whatever N is and the values depend only on the seed and N.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from headrace import errors
from headrace.convert import ProgressCallback, write_source
from headrace.convert.source import AttributeValue, BBox, FieldInfo, Piece, SourceFrame
from headrace.writer import Codec

__all__ = ["generate_particles", "particle_radius", "particle_slices", "SLICE_PARTICLES", "BOX"]

SLICE_PARTICLES = 1 << 20
BOX: BBox = ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
_VOLUME_FRACTION = 1.0 / 3.0


def particle_radius(count: int) -> float:
    """The radius at which ``count`` spheres fill a third of the unit box: ``cbrt(1/3 / (count * 4/3 pi))``."""
    return (_VOLUME_FRACTION / (count * 4.0 / 3.0 * math.pi)) ** (1.0 / 3.0)


def particle_slices(count: int, seed: int) -> Iterator[np.ndarray]:
    """The ``count`` particles of ``seed`` as ``(k, 8)`` float32 slices, in order."""
    rng = np.random.default_rng(seed)
    radius = np.float32(particle_radius(count))
    for start in range(0, count, SLICE_PARTICLES):
        size = min(SLICE_PARTICLES, count - start)
        particles = np.empty((size, 8), dtype=np.float32)
        particles[:, 0:3] = rng.random((size, 3), dtype=np.float32)
        particles[:, 3] = radius
        particles[:, 4:7] = rng.random((size, 3), dtype=np.float32)
        particles[:, 7] = 1.0
        yield particles


class _ParticleSource:
    def __init__(self, count: int, frames: int, seed: int) -> None:
        self.path = Path("<generate particles>")
        self.count, self.frame_count, self.seed = count, frames, seed
        self.fields = [FieldInfo("particles", np.dtype("float32"), 8)]
        self.attributes: dict[str, AttributeValue] = {
            "source_format": "generated",
            "generator": "particles",
            "seed": seed,
            "particle_radius": particle_radius(count),
        }
        self.total_bytes = count * 32 * frames

    def frames(self) -> Iterator[SourceFrame]:
        for index in range(self.frame_count):
            pieces = (Piece("particles", part, part.nbytes) for part in particle_slices(self.count, self.seed))
            yield SourceFrame(time=float(index), bbox=BOX, pieces=pieces)


def generate_particles(
    path: os.PathLike | str,
    *,
    particles: int,
    frames: int,
    seed: int = 0,
    chunk_size_bytes: int | None = None,
    codec: Codec = "none",
    codec_level: int | None = None,
    progress: ProgressCallback | None = None,
) -> Path:
    """Write the particle series to ``path`` and return the path; see the module docstring."""
    if particles < 1 or frames < 1:
        raise errors.UsageError(f"--particles and --frames must be at least 1, got {particles} and {frames}")
    return write_source(
        _ParticleSource(particles, frames, seed), path, chunk_size_bytes=chunk_size_bytes, codec=codec,
        codec_level=codec_level, progress=progress,
    )
