"""A velocity field on a nodal grid, stored in native blocks as seed ``002_…`` does: the analytic ABC
flow, or synthetic turbulence (``kind="turbulence"``).

``u = A sin(z + pz) + C cos(y + py)``, ``v = B sin(x + px) + A cos(z + pz)``,
``w = C sin(y + py) + B cos(x + px)`` on ``[0, 2 pi]^3`` with ``B = sqrt(2)``, ``C = 1`` and
``A(t) = sqrt(3) * (1 + 0.1 sin(2 pi t / 16))`` (steady when there is one frame: ``A(0) = sqrt(3)``);
the phases ``px, py, pz`` come from ``numpy.random.default_rng(seed)``. Point (i, j, k) sits at
``(i, j, k) * 2 pi / (dims - 1)``. Values are float32 x 3 in the field ``velocity``.

Turbulence is a kinematic simulation (Fung et al., J. Fluid Mech. 236, 1992): ``TURBULENCE_MODES``
Fourier modes ``u = sum_n A_n a_n cos(k_n . x + phi_n + omega_n t)`` with wavenumbers ``|k_n|``
log-spaced over ``[1, 32]`` (scales from the box to a few cells of a 256^3 grid), random directions,
amplitudes from a Kolmogorov spectrum ``E(k) ~ k^(-5/3)`` (``A_n ~ sqrt(E(k_n) dk_n)``), each ``a_n``
a unit vector perpendicular to ``k_n`` (so the field is divergence-free), phases uniform and eddy
frequencies ``omega_n ~ k_n^(2/3)``; scaled to an rms speed of 1. Streamlines in it wander across the
whole grid, through many blocks, as the paper's turbulent mixing layer makes them do.

Two unsteady flows whose paths are known (issue 40's pathlines test against them), frame ``k`` at time
``k * dt`` (``dt`` 0.1 unless given; the ABC flow and turbulence keep ``dt = 1``):

- ``rotation``: a rigid rotation about the z axis whose rate changes with time, with a steady rise, on
  ``[-1, 1]^3``: ``u = -w(t) y``, ``v = w(t) x``, ``w_z = ROTATION_RISE``, ``w(t) = 1 + ROTATION_SWING sin(2 pi t /
  ROTATION_PERIOD)``. A path keeps its radius and turns by the integral of ``w`` (:func:`rotation_path`, closed
  form). The field is linear in space, so trilinear interpolation is exact; only the time between frames is
  interpolated (linearly), an error of order ``dt^2`` against the continuous rate.
- ``double-gyre``: the time-dependent double gyre (Shadden, Lekien and Marsden, Physica D 212, 2005) on
  ``[0, 2] x [0, 1]`` with ``A = 0.1``, ``epsilon = 0.25``, ``omega = 2 pi / 10``, extended to 3D on ``z in [0, 1]``
  by ``w_z = GYRE_RISE sin(pi z)``, whose paths in z are closed form (``tan(pi z / 2)`` grows as ``exp(pi
  GYRE_RISE t)``); in x and y they are known to any precision by integrating :func:`double_gyre_velocity`.

Block layout (``layout = "blocks"``, ``block_dims = [BX, BY, BZ]``): the grid is cut into blocks of
BX x BY x BZ points; blocks are stored one after another, x fastest, then y, then z (block (bi, bj, bk)
is number ``bi + NBX * (bj + NBY * bk)``, ``NBX = ceil(X / BX)``), and each block's points are one
contiguous run, x fastest, then y, then z. Where a block size does not divide the grid, the blocks at
the far edges are partial: stored whole, their points past the grid are padding that no reader uses
(this generator fills them with the field continued, the converters with zeros). The chunk size is
rounded down to whole blocks (at least one), so every chunk holds whole blocks.
"""

from __future__ import annotations

import math
import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from headrace import errors
from headrace.convert import ProgressCallback, write_source
from headrace.convert.source import AttributeValue, BBox, FieldInfo, Piece, SourceFrame
from headrace.grid_layouts import DEFAULT_BLOCK, TARGET_CHUNK_BYTES, default_block, from_blocks, padded_to, to_blocks
from headrace.writer import Codec, default_chunk_size

__all__ = [
    "generate_flow",
    "abc_velocity",
    "abc_phases",
    "to_blocks",
    "DEFAULT_BLOCK",
    "default_block",
    "padded_to",
    "from_blocks",
    "TARGET_CHUNK_BYTES",
    "PERIOD_FRAMES",
    "TURBULENCE_MODES",
    "turbulence_modes",
    "turbulence_velocity",
    "FLOW_KINDS",
    "ROTATION_PERIOD",
    "ROTATION_RISE",
    "ROTATION_SWING",
    "GYRE_RISE",
    "rotation_velocity",
    "rotation_path",
    "double_gyre_velocity",
    "double_gyre_z",
    "frame_times",
]

PERIOD_FRAMES = 16
_B = math.sqrt(2.0)
_C = 1.0
_ELEMENT_BYTES = 3 * 4


def abc_phases(seed: int) -> np.ndarray:
    """The phases (px, py, pz) that ``seed`` draws, uniform in [0, 2 pi)."""
    return np.random.default_rng(seed).uniform(0.0, 2.0 * math.pi, 3)


def _a(time: float) -> float:
    return math.sqrt(3.0) * (1.0 + 0.1 * math.sin(2.0 * math.pi * time / PERIOD_FRAMES))


def abc_velocity(x: np.ndarray, y: np.ndarray, z: np.ndarray, time: float, *, seed: int) -> np.ndarray:
    """The velocity at points ``(x, y, z)`` (broadcastable) and ``time``, shape ``(..., 3)``, float64."""
    px, py, pz = abc_phases(seed)
    a = _a(time)
    shape = np.broadcast_shapes(np.shape(x), np.shape(y), np.shape(z))
    out = np.empty(shape + (3,))
    out[..., 0] = a * np.sin(z + pz) + _C * np.cos(y + py)
    out[..., 1] = _B * np.sin(x + px) + a * np.cos(z + pz)
    out[..., 2] = _C * np.sin(y + py) + _B * np.cos(x + px)
    return out


TURBULENCE_MODES = 48


def turbulence_modes(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(wave vectors (M, 3), amplitude vectors (M, 3), phases (M,), frequencies (M,)) drawn by ``seed``."""
    rng = np.random.default_rng(seed)
    k = np.geomspace(1.0, 32.0, TURBULENCE_MODES)
    directions = rng.normal(size=(TURBULENCE_MODES, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    waves = k[:, None] * directions
    across = rng.normal(size=(TURBULENCE_MODES, 3))
    across -= np.sum(across * directions, axis=1, keepdims=True) * directions  # perpendicular: divergence-free
    across /= np.linalg.norm(across, axis=1, keepdims=True)
    dk = k * (np.log(32.0) / (TURBULENCE_MODES - 1))  # the log spacing's width at k
    amplitude = np.sqrt(k ** (-5.0 / 3.0) * dk)
    amplitude /= np.sqrt(0.5 * np.sum(amplitude**2))  # rms speed 1 (each cosine carries half its square)
    phases = rng.uniform(0.0, 2.0 * math.pi, TURBULENCE_MODES)
    return waves, amplitude[:, None] * across, phases, k ** (2.0 / 3.0)


def turbulence_velocity(x: np.ndarray, y: np.ndarray, z: np.ndarray, time: float, *, seed: int) -> np.ndarray:
    """The synthetic turbulence at points ``(x, y, z)`` (broadcastable) and ``time``, shape ``(..., 3)``."""
    waves, amplitudes, phases, frequencies = turbulence_modes(seed)
    shape = np.broadcast_shapes(np.shape(x), np.shape(y), np.shape(z))
    out = np.zeros(shape + (3,))
    for wave, amplitude, phase, omega in zip(waves, amplitudes, phases, frequencies):
        c = np.cos(wave[0] * x + wave[1] * y + wave[2] * z + (phase + omega * time))
        out += np.broadcast_to(c, shape)[..., None] * amplitude
    return out


ROTATION_PERIOD = 4.0  # the rate's swing repeats every 4 time units
ROTATION_SWING = 0.5
ROTATION_RISE = 0.1


def _rotation_rate(time: float) -> float:
    return 1.0 + ROTATION_SWING * math.sin(2.0 * math.pi * time / ROTATION_PERIOD)


def _rotation_angle(time: np.ndarray) -> np.ndarray:
    """The rate's integral from 0 to each of ``time``."""
    phase = 2.0 * math.pi / ROTATION_PERIOD
    return time + ROTATION_SWING * (1.0 - np.cos(phase * time)) / phase


def rotation_velocity(x: np.ndarray, y: np.ndarray, z: np.ndarray, time: float, *, seed: int = 0) -> np.ndarray:
    """The rotation's velocity at points ``(x, y, z)`` and ``time``, shape ``(..., 3)`` (``seed`` unused)."""
    shape = np.broadcast_shapes(np.shape(x), np.shape(y), np.shape(z))
    rate = _rotation_rate(time)
    out = np.empty(shape + (3,))
    out[..., 0] = -rate * np.broadcast_to(y, shape)
    out[..., 1] = rate * np.broadcast_to(x, shape)
    out[..., 2] = ROTATION_RISE
    return out


def rotation_path(start: np.ndarray, t0: float, times: np.ndarray) -> np.ndarray:
    """Where the points ``start`` (N, 3), released at ``t0``, are at ``times`` (T,): shape (T, N, 3), closed form."""
    start = np.asarray(start, dtype=np.float64).reshape(-1, 3)
    at = np.asarray(times, dtype=np.float64)
    turned = (_rotation_angle(at) - _rotation_angle(np.asarray(t0, dtype=np.float64)))[:, None]
    c, s = np.cos(turned), np.sin(turned)
    x, y, z = start[:, 0], start[:, 1], start[:, 2]
    rise = (at - t0)[:, None] * ROTATION_RISE
    return np.stack([c * x - s * y, s * x + c * y, z + rise], axis=-1)


GYRE_A, GYRE_EPSILON, GYRE_OMEGA = 0.1, 0.25, 2.0 * math.pi / 10.0
GYRE_RISE = 0.05


def double_gyre_velocity(x: np.ndarray, y: np.ndarray, z: np.ndarray, time: float, *, seed: int = 0) -> np.ndarray:
    """The 3D double gyre's velocity at points ``(x, y, z)`` and ``time``, shape ``(..., 3)`` (``seed`` unused)."""
    shape = np.broadcast_shapes(np.shape(x), np.shape(y), np.shape(z))
    swing = GYRE_EPSILON * math.sin(GYRE_OMEGA * time)
    a, b = swing, 1.0 - 2.0 * swing
    f = a * x * x + b * x
    out = np.empty(shape + (3,))
    out[..., 0] = np.broadcast_to(-math.pi * GYRE_A * np.sin(math.pi * f) * np.cos(math.pi * y), shape)
    out[..., 1] = np.broadcast_to(math.pi * GYRE_A * np.cos(math.pi * f) * np.sin(math.pi * y) * (2.0 * a * x + b), shape)
    out[..., 2] = np.broadcast_to(GYRE_RISE * np.sin(math.pi * z), shape)
    return out


def double_gyre_z(z0: np.ndarray, t0: float, times: np.ndarray) -> np.ndarray:
    """The double gyre's z of points released at ``z0`` (N,) in (0, 1) at ``t0``, at ``times`` (T,): (T, N), closed form."""
    grown = np.exp(math.pi * GYRE_RISE * (np.asarray(times, dtype=np.float64) - t0))[:, None]
    return 2.0 / math.pi * np.arctan(np.tan(math.pi * np.asarray(z0, dtype=np.float64) / 2.0)[None, :] * grown)


# Each kind: its velocity, the box it fills (low corner, high corner) and the time between frames unless told.
FLOW_KINDS = {
    "abc": (abc_velocity, (0.0, 0.0, 0.0), (2.0 * math.pi,) * 3, 1.0),
    "turbulence": (turbulence_velocity, (0.0, 0.0, 0.0), (2.0 * math.pi,) * 3, 1.0),
    "rotation": (rotation_velocity, (-1.0, -1.0, -1.0), (1.0, 1.0, 1.0), 0.1),
    "double-gyre": (double_gyre_velocity, (0.0, 0.0, 0.0), (2.0, 1.0, 1.0), 0.1),
}


def frame_times(kind: str, frames: int, dt: float | None = None) -> list[float]:
    """The times of a ``kind`` series' frames: ``k * dt`` (the kind's own ``dt`` unless given)."""
    step = FLOW_KINDS[kind][3] if dt is None else dt
    return [round(k * step, 12) for k in range(frames)]  # 0.3, not 0.30000000000000004


class _FlowSource:
    def __init__(self, dims: tuple[int, int, int], block: tuple[int, int, int], frames: int, seed: int,
                 kind: str, dt: float | None) -> None:
        self.path = Path("<generate flow>")
        self.dims, self.block, self.frame_count, self.seed = dims, block, frames, seed
        self.velocity, self.low, self.high, _ = FLOW_KINDS[kind]
        self.times = frame_times(kind, frames, dt)
        self.spacing = tuple((high - low) / (d - 1) for low, high, d in zip(self.low, self.high, dims))
        self.fields = [FieldInfo("velocity", np.dtype("float32"), 3)]
        self.attributes: dict[str, AttributeValue] = {
            "source_format": "generated",
            "generator": "flow",
            "flow": kind,
            "seed": seed,
            "grid_dims": list(dims),
            "grid_origin": list(self.low),
            "grid_spacing": list(self.spacing),
            "block_dims": list(block),
            "layout": "blocks",
        }
        self.total_bytes = dims[0] * dims[1] * dims[2] * _ELEMENT_BYTES * frames

    @property
    def block_bytes(self) -> int:
        return self.block[0] * self.block[1] * self.block[2] * _ELEMENT_BYTES

    def frames(self) -> Iterator[SourceFrame]:
        bbox: BBox = (self.low, self.high)
        for time in self.times:
            yield SourceFrame(time=time, bbox=bbox, pieces=self._block_rows(time))

    def _block_rows(self, time: float) -> Iterator[Piece]:
        """One row of blocks (fixed bj, bk; every bi) at a time: that run is contiguous in block order.
        Rows are computed on a thread per core (NumPy's ufuncs let go of the GIL), a few ahead, in order."""
        (nx, ny, nz), (bx, by, bz) = self.dims, self.block
        hx, hy, hz = self.spacing
        ox, oy, oz = self.low
        nbx = -(-nx // bx)  # a partial block at the edge is computed whole: its padding is the field continued
        x = (ox + np.arange(nbx * bx) * hx).reshape(nbx, 1, 1, bx)  # (NBX, BZ, BY, BX) broadcast axes

        def row(k0: int, j0: int) -> np.ndarray:
            z = (oz + (k0 + np.arange(bz)) * hz).reshape(1, bz, 1, 1)
            y = (oy + (j0 + np.arange(by)) * hy).reshape(1, 1, by, 1)
            return self.velocity(x, y, z, time, seed=self.seed).astype(np.float32).reshape(-1, 3)

        origins = [(k0, j0) for k0 in range(0, nz, bz) for j0 in range(0, ny, by)]
        workers = os.cpu_count() or 1
        with ThreadPoolExecutor(max_workers=workers) as pool:
            pending: deque[Future[np.ndarray]] = deque()
            for origin in origins:
                pending.append(pool.submit(row, *origin))
                if len(pending) > 2 * workers:
                    done = pending.popleft().result()
                    yield Piece("velocity", done, done.nbytes)
            while pending:
                done = pending.popleft().result()
                yield Piece("velocity", done, done.nbytes)


def generate_flow(
    path: os.PathLike | str,
    *,
    dims: Sequence[int],
    block: Sequence[int] | None = None,
    frames: int = 1,
    seed: int = 0,
    kind: str = "abc",
    dt: float | None = None,
    chunk_size_bytes: int | None = None,
    codec: Codec = "none",
    codec_level: int | None = None,
    progress: ProgressCallback | None = None,
) -> Path:
    """Write the ABC flow, synthetic turbulence, the rotation or the 3D double gyre (``kind``, :data:`FLOW_KINDS`) on
    an X x Y x Z grid in BX x BY x BZ blocks (``frames`` frames ``dt`` apart, the kind's own unless given); return
    the path."""
    dims = tuple(int(d) for d in dims)
    if len(dims) != 3 or min(dims) < 2:
        raise errors.UsageError(f"--dims needs three sizes of at least 2 (a nodal grid), got {list(dims)}")
    block = tuple(int(b) for b in block) if block is not None else default_block(dims)
    if len(block) != 3 or min(block) < 1 or any(b > d for b, d in zip(block, dims)):
        raise errors.UsageError(f"--block needs three sizes from 1 to the grid's {list(dims)}, got {list(block)}")
    if frames < 1:
        raise errors.UsageError(f"--frames must be at least 1, got {frames}")
    if kind not in FLOW_KINDS:
        raise errors.UsageError(f"--kind must be one of {', '.join(FLOW_KINDS)}, got {kind!r}")
    if dt is not None and not (math.isfinite(dt) and dt > 0):
        raise errors.UsageError(f"--dt must be a positive number of time units, got {dt}")
    source = _FlowSource(dims, block, frames, seed, kind, dt)  # type: ignore[arg-type]
    target = default_chunk_size(codec) if chunk_size_bytes is None else chunk_size_bytes
    chunk_bytes = max(1, target // source.block_bytes) * source.block_bytes
    return write_source(
        source, path, chunk_size_bytes=chunk_bytes, codec=codec, codec_level=codec_level, progress=progress
    )
