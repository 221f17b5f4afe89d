"""A time-varying analytic scalar field on a nodal grid: moving Gaussian blobs in the unit box.

``f(p, t) = sum_k a_k * exp(-|p - c_k(t)|^2 / (2 s_k^2))`` with ``c_k(t) = c_k + r_k * sin(w t + phi_k)``
(per axis), ``w = 2 pi / 16`` (a period of 16 frames). The :data:`BLOBS` blobs' amplitudes ``a``, widths
``s``, centres ``c``, orbit radii ``r`` and phases ``phi`` come from ``numpy.random.default_rng(seed)``.
Point (i, j, k) sits at ``(i, j, k) * spacing`` with ``spacing = 1 / (dims - 1)``; frame ``f`` is time
``f``. Values are float32, one component, field ``scalar``, stored x fastest, then y, then z
(``layout = "linear"``), a slab of z planes at a time.

With ``cutoff > 0`` every value below it is written as 0: empty space, as in sparse simulation output
(a density far from its structures), which makes the field compress; ``cutoff = 0`` keeps the tails.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from headrace import errors
from headrace.convert import ProgressCallback, write_source
from headrace.convert.source import AttributeValue, BBox, FieldInfo, Piece, SourceFrame
from headrace.writer import Codec

__all__ = ["generate_volume", "scalar_field", "blob_parameters", "Blobs", "BLOBS", "PERIOD_FRAMES"]

BLOBS = 8
PERIOD_FRAMES = 16
# Grid points computed and written at a time (bounds the memory a frame needs).
_SLAB_POINTS = 1 << 22
_BOX: BBox = ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))


@dataclass(frozen=True)
class Blobs:
    """The blobs of one seed: arrays of shape (BLOBS,) or (BLOBS, 3)."""

    amplitudes: np.ndarray
    widths: np.ndarray
    centres: np.ndarray
    orbits: np.ndarray
    phases: np.ndarray

    def centres_at(self, time: float) -> np.ndarray:
        return self.centres + self.orbits * np.sin(2.0 * math.pi / PERIOD_FRAMES * time + self.phases)


def blob_parameters(seed: int) -> Blobs:
    """The blobs that ``seed`` draws (in this order: amplitudes, widths, centres, orbits, phases)."""
    rng = np.random.default_rng(seed)
    return Blobs(
        amplitudes=rng.uniform(0.5, 1.0, BLOBS),
        widths=rng.uniform(0.05, 0.15, BLOBS),
        centres=rng.uniform(0.25, 0.75, (BLOBS, 3)),
        orbits=rng.uniform(0.0, 0.15, (BLOBS, 3)),
        phases=rng.uniform(0.0, 2.0 * math.pi, (BLOBS, 3)),
    )


def scalar_field(x: np.ndarray, y: np.ndarray, z: np.ndarray, time: float, *, seed: int) -> np.ndarray:
    """The field at points ``(x, y, z)`` (broadcastable arrays) and ``time``, in float64: the reference."""
    blobs = blob_parameters(seed)
    centres = blobs.centres_at(time)
    total = np.zeros(np.broadcast_shapes(np.shape(x), np.shape(y), np.shape(z)))
    for k in range(BLOBS):
        distance2 = (x - centres[k, 0]) ** 2 + (y - centres[k, 1]) ** 2 + (z - centres[k, 2]) ** 2
        total += blobs.amplitudes[k] * np.exp(-distance2 / (2.0 * blobs.widths[k] ** 2))
    return total


class _VolumeSource:
    def __init__(self, dims: tuple[int, int, int], frames: int, seed: int, cutoff: float) -> None:
        self.path = Path("<generate volume>")
        self.dims, self.frame_count, self.seed, self.cutoff = dims, frames, seed, cutoff
        self.spacing = tuple(1.0 / (d - 1) for d in dims)
        self.fields = [FieldInfo("scalar", np.dtype("float32"), 1)]
        self.attributes: dict[str, AttributeValue] = {
            "source_format": "generated",
            "generator": "volume",
            "seed": seed,
            "cutoff": cutoff,
            "grid_dims": list(dims),
            "grid_origin": [0.0, 0.0, 0.0],
            "grid_spacing": list(self.spacing),
            "layout": "linear",
        }
        self.total_bytes = dims[0] * dims[1] * dims[2] * 4 * frames

    def frames(self) -> Iterator[SourceFrame]:
        for index in range(self.frame_count):
            yield SourceFrame(time=float(index), bbox=_BOX, pieces=self._slabs(float(index)))

    def _slabs(self, time: float) -> Iterator[Piece]:
        """z slabs of the frame; the Gaussians are separable, so each blob is an outer product of 1-D factors."""
        nx, ny, nz = self.dims
        axes = [np.arange(n) * h for n, h in zip(self.dims, self.spacing)]
        blobs = blob_parameters(self.seed)
        centres = blobs.centres_at(time)
        factors = [
            [np.exp(-((axes[axis] - centres[k, axis]) ** 2) / (2.0 * blobs.widths[k] ** 2)) for axis in range(3)]
            for k in range(BLOBS)
        ]
        planes = [blobs.amplitudes[k] * np.outer(factors[k][1], factors[k][0]) for k in range(BLOBS)]  # (Y, X)
        slab_planes = max(1, _SLAB_POINTS // (nx * ny))
        for z0 in range(0, nz, slab_planes):
            z1 = min(nz, z0 + slab_planes)
            slab = np.zeros((z1 - z0, ny, nx))
            for k in range(BLOBS):
                slab += factors[k][2][z0:z1, None, None] * planes[k][None, :, :]
            if self.cutoff > 0:
                slab[slab < self.cutoff] = 0.0
            values = slab.astype(np.float32).reshape(-1, 1)
            yield Piece("scalar", values, values.nbytes)


def generate_volume(
    path: os.PathLike | str,
    *,
    dims: Sequence[int],
    frames: int,
    seed: int = 0,
    cutoff: float = 0.0,
    chunk_size_bytes: int | None = None,
    codec: Codec = "none",
    codec_level: int | None = None,
    progress: ProgressCallback | None = None,
) -> Path:
    """Write the moving-blobs field on an X x Y x Z grid (``dims``) for ``frames`` frames; return the path.
    Values below ``cutoff`` are written as 0 (see the module docstring)."""
    dims = tuple(int(d) for d in dims)
    if len(dims) != 3 or min(dims) < 2:
        raise errors.UsageError(f"--dims needs three sizes of at least 2 (a nodal grid), got {list(dims)}")
    if frames < 1:
        raise errors.UsageError(f"--frames must be at least 1, got {frames}")
    if not cutoff >= 0:
        raise errors.UsageError(f"--cutoff must be 0 or more, got {cutoff}")
    return write_source(
        _VolumeSource(dims, frames, seed, float(cutoff)), path, chunk_size_bytes=chunk_size_bytes,  # type: ignore[arg-type]
        codec=codec, codec_level=codec_level, progress=progress,
    )
