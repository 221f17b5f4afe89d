"""Raw float32 particle files in the layout of seed ``000_…``: 8 values per particle, frames back to back.

Each particle is ``x, y, z, radius, r, g, b, a`` as little-endian float32 (32 bytes); there is no header.
The frame split comes from the caller (``particles_per_frame`` or ``frames``); without either, the whole
file is one frame.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from headrace import errors
from headrace.convert.source import AttributeValue, BBox, FieldInfo, Piece, SourceFrame, bad_data, open_error

__all__ = ["PARTICLE_BYTES", "RawParticleSource", "open_raw_particles"]

PARTICLE_COMPONENTS = 8
PARTICLE_BYTES = PARTICLE_COMPONENTS * 4
# Particles scanned or written at a time (bounds the memory a frame needs).
_SLICE_PARTICLES = 1 << 20


class RawParticleSource:
    """An opened raw particle file; see :func:`open_raw_particles`."""

    def __init__(self, path: Path, particles_per_frame: int, frame_count: int) -> None:
        self.path = path
        self.fields = [FieldInfo("particles", np.dtype("float32"), PARTICLE_COMPONENTS)]
        self.attributes: dict[str, AttributeValue] = {
            "source_format": "raw-particles",
            "source_path": os.fspath(path),
        }
        self.frame_count = frame_count
        self.particles_per_frame = particles_per_frame
        self.total_bytes = particles_per_frame * frame_count * PARTICLE_BYTES

    def frames(self) -> Iterator[SourceFrame]:
        # One frame mapped at a time, unmapped after it: the pages it touched leave the process with it.
        for index in range(self.frame_count):
            particles = np.memmap(self.path, dtype="<f4", mode="r", offset=index * self.particles_per_frame * PARTICLE_BYTES,
                                  shape=(self.particles_per_frame, PARTICLE_COMPONENTS))
            yield SourceFrame(time=float(index), bbox=_centre_bbox(particles), pieces=_slices(particles))
            del particles


def _slices(particles: np.ndarray) -> Iterator[Piece]:
    for start in range(0, particles.shape[0], _SLICE_PARTICLES):
        part = np.asarray(particles[start : start + _SLICE_PARTICLES])
        yield Piece("particles", part, part.shape[0] * PARTICLE_BYTES)


def open_raw_particles(
    path: os.PathLike | str, *, particles_per_frame: int | None = None, frames: int | None = None
) -> RawParticleSource:
    """Check a raw particle file and decide its frames.

    ``particles_per_frame`` or ``frames`` (not both) split the file into equal frames; the file size
    must be a whole number of particles and of frames. Raises ``TruncatedFileError`` for a partial
    particle or frame at the end, ``EmptyFieldError`` for an empty file, ``UsageError`` for bad options.
    """
    path = Path(path)
    if particles_per_frame is not None and frames is not None:
        raise errors.UsageError("give either --particles-per-frame or --frames, not both")
    for name, value in (("--particles-per-frame", particles_per_frame), ("--frames", frames)):
        if value is not None and value < 1:
            raise errors.UsageError(f"{name} must be at least 1, got {value}")
    try:
        size = path.stat().st_size
        with open(path, "rb"):
            pass
    except OSError as error:
        raise open_error(path, error) from error

    if size == 0:
        raise bad_data(errors.EmptyFieldError, path, 0, f"at least one particle ({PARTICLE_BYTES} bytes)", "0 bytes")
    if size % PARTICLE_BYTES:
        raise bad_data(
            errors.TruncatedFileError,
            path,
            size - size % PARTICLE_BYTES,
            f"a multiple of {PARTICLE_BYTES} bytes (8 float32 per particle)",
            f"{size} bytes ({size % PARTICLE_BYTES} bytes of a partial particle at the end)",
        )
    particles = size // PARTICLE_BYTES

    if frames is not None:
        if particles % frames:
            raise bad_data(
                errors.TruncatedFileError,
                path,
                (particles // frames) * frames * PARTICLE_BYTES,
                f"{frames} frames of equal size (a multiple of {frames * PARTICLE_BYTES} bytes)",
                f"{size} bytes ({particles} particles)",
            )
        particles_per_frame = particles // frames
    elif particles_per_frame is None:
        particles_per_frame = particles
    if particles % particles_per_frame:
        whole = particles - particles % particles_per_frame
        raise bad_data(
            errors.TruncatedFileError,
            path,
            whole * PARTICLE_BYTES,
            f"frames of {particles_per_frame} particles (a multiple of {particles_per_frame * PARTICLE_BYTES} bytes)",
            f"{size} bytes, ending in a partial frame of {particles - whole} particles",
        )
    return RawParticleSource(path, particles_per_frame, particles // particles_per_frame)


def _centre_bbox(particles: np.ndarray) -> BBox | None:
    """Bounding box of the particle centres (x, y, z), scanned in slices; ``None`` unless it is finite."""
    low = np.full(3, np.nan)
    high = np.full(3, np.nan)
    for start in range(0, particles.shape[0], _SLICE_PARTICLES):
        centres = particles[start : start + _SLICE_PARTICLES, 0:3]
        # fmin/fmax skip NaNs: a coordinate is NaN only where every value seen so far is NaN.
        low = np.fmin(low, np.fmin.reduce(centres, axis=0))
        high = np.fmax(high, np.fmax.reduce(centres, axis=0))
    if not (np.isfinite(low).all() and np.isfinite(high).all()):
        return None
    return (tuple(float(v) for v in low), tuple(float(v) for v in high))  # type: ignore[return-value]
