"""Synthetic generators: determinism, statistics, analytic references, block layout, bounded memory."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest

import headrace
from headrace import errors
from headrace.generate import flow, generate_flow, generate_particles, generate_volume, particles
from headrace.generate.flow import abc_velocity, from_blocks, to_blocks
from headrace.generate.volume import scalar_field


def test_particles_follow_seed_000(tmp_path):
    count = 200_000
    ds = headrace.open(generate_particles(tmp_path / "p.hrc", particles=count, frames=3, seed=11))

    assert [(f.name, f.dtype, f.components) for f in ds.fields] == [("particles", "float32", 8)]
    assert [frame.time for frame in ds.frames] == [0.0, 1.0, 2.0]
    assert all(frame.bbox == ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0)) for frame in ds.frames)
    data = ds.read(0, "particles")
    assert data.shape == (count, 8)
    for frame in (1, 2):
        np.testing.assert_array_equal(ds.read(frame, "particles"), data)  # frames repeat the particles
    # Total sphere volume is a third of the unit box.
    radius = data[:, 3]
    assert np.all(radius == radius[0])
    assert count * 4.0 / 3.0 * math.pi * float(radius[0]) ** 3 == pytest.approx(1.0 / 3.0, rel=1e-5)
    # Positions and colours uniform in [0, 1): mean 1/2, variance 1/12; alpha 1.
    for columns in (slice(0, 3), slice(4, 7)):
        values = data[:, columns]
        assert values.min() >= 0.0 and values.max() < 1.0
        np.testing.assert_allclose(values.mean(axis=0, dtype=np.float64), 0.5, atol=0.005)
        np.testing.assert_allclose(values.var(axis=0, dtype=np.float64), 1.0 / 12.0, rtol=0.02)
        histogram = np.histogram(values[:, 0], bins=10, range=(0, 1))[0]
        np.testing.assert_allclose(histogram, count / 10, rtol=0.05)
    np.testing.assert_array_equal(data[:, 7], 1.0)


def test_particles_are_deterministic_for_a_seed(tmp_path):
    a = headrace.open(generate_particles(tmp_path / "a.hrc", particles=5000, frames=1, seed=3)).read(0, "particles")
    b = headrace.open(generate_particles(tmp_path / "b.hrc", particles=5000, frames=1, seed=3,
                                         codec="zstd")).read(0, "particles")
    c = headrace.open(generate_particles(tmp_path / "c.hrc", particles=5000, frames=1, seed=4)).read(0, "particles")

    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a[:, 0:3], c[:, 0:3])
    np.testing.assert_array_equal(a, np.concatenate(list(particles.particle_slices(5000, 3))))


def test_progress_reports_bytes_done_up_to_the_total(tmp_path, monkeypatch):
    monkeypatch.setattr(particles, "SLICE_PARTICLES", 1000)
    done = []

    generate_particles(tmp_path / "p.hrc", particles=2500, frames=2, progress=done.append)

    assert done == sorted(done) and len(done) == 6
    assert done[-1] == 2500 * 32 * 2


def test_particle_memory_stays_at_one_slice(tmp_path, monkeypatch):
    monkeypatch.setattr(particles, "SLICE_PARTICLES", 10_000)
    count = 400_000  # 12.8 MB per frame; one slice is 320 kB
    tracemalloc.start()
    try:  # the writer holds one chunk too (a slice's tail): 64 KiB here
        generate_particles(tmp_path / "p.hrc", particles=count, frames=2, seed=0, chunk_size_bytes=64 << 10)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 8 * 10_000 * 32, f"peak {peak} bytes: generation is not sliced"
    data = headrace.open(tmp_path / "p.hrc").read(1, "particles")
    assert data.shape == (count, 8)
    np.testing.assert_array_equal(data, np.concatenate(list(particles.particle_slices(count, 0))))


def test_volume_matches_its_analytic_field(tmp_path):
    dims = (17, 9, 6)
    ds = headrace.open(generate_volume(tmp_path / "v.hrc", dims=dims, frames=3, seed=5))

    assert [(f.name, f.dtype, f.components) for f in ds.fields] == [("scalar", "float32", 1)]
    assert list(ds.attributes["grid_dims"]) == [17, 9, 6]
    assert list(ds.attributes["grid_origin"]) == [0.0, 0.0, 0.0]
    assert list(ds.attributes["grid_spacing"]) == pytest.approx([1 / 16, 1 / 8, 1 / 5])
    assert ds.attributes["layout"] == "linear"
    z, y, x = np.meshgrid(np.arange(6) / 5, np.arange(9) / 8, np.arange(17) / 16, indexing="ij")
    previous = None
    for frame in range(3):
        values = ds.read(frame, "scalar").reshape(6, 9, 17)  # x fastest
        np.testing.assert_allclose(values, scalar_field(x, y, z, float(frame), seed=5), rtol=1e-6, atol=1e-7)
        assert ds.frames[frame].time == float(frame)
        if previous is not None:
            assert not np.array_equal(values, previous)  # the blobs move
        previous = values


def test_volume_in_several_slabs_and_deterministic(tmp_path, monkeypatch):
    from headrace.generate import volume

    whole = headrace.open(generate_volume(tmp_path / "a.hrc", dims=(8, 8, 8), frames=1, seed=2)).read(0, "scalar")
    monkeypatch.setattr(volume, "_SLAB_POINTS", 100)
    slabs = headrace.open(generate_volume(tmp_path / "b.hrc", dims=(8, 8, 8), frames=1, seed=2)).read(0, "scalar")

    np.testing.assert_array_equal(whole, slabs)


def test_volume_cutoff_writes_empty_space_as_zero_and_compresses(tmp_path):
    dims = (32, 32, 32)
    plain = headrace.open(generate_volume(tmp_path / "a.hrc", dims=dims, frames=1, seed=3, codec="zstd"))
    sparse = headrace.open(generate_volume(tmp_path / "b.hrc", dims=dims, frames=1, seed=3, codec="zstd", cutoff=0.05))

    full, cut = plain.read(0, "scalar"), sparse.read(0, "scalar")
    below = full < np.float32(0.05)
    assert 0 < below.mean() < 1
    assert np.all(cut[below] == 0)
    np.testing.assert_array_equal(cut[~below], full[~below])
    assert list(sparse.attributes["cutoff"]) == [0.05]
    assert sparse.stored_bytes < 0.6 * plain.stored_bytes
    with pytest.raises(headrace.errors.UsageError, match="--cutoff"):
        generate_volume(tmp_path / "c.hrc", dims=dims, frames=1, cutoff=-1)
    assert not (tmp_path / "c.hrc").exists()


def test_gdeflate_writes_format_1_1_in_64_kib_chunks_and_reads_back(tmp_path):
    plain = headrace.open(generate_volume(tmp_path / "a.hrc", dims=(40, 40, 40), frames=2, seed=4))
    packed = headrace.open(generate_volume(tmp_path / "g.hrc", dims=(40, 40, 40), frames=2, seed=4, codec="gdeflate",
                                           cutoff=0.05))
    assert plain.container.version == (1, 0) and packed.container.version == (1, 1)
    table = packed.container.chunk_table()
    assert set(table["codec"]) == {"gdeflate"} and max(table["raw_size"]) <= 1 << 16
    cut = plain.read(1, "scalar").copy()
    cut[cut < np.float32(0.05)] = 0
    np.testing.assert_array_equal(packed.read(1, "scalar"), cut)
    assert packed.stored_bytes < 0.6 * packed.raw_bytes
    with pytest.raises(headrace.errors.UsageError, match="gdeflate encodes chunks of at most 65536 raw bytes"):
        generate_volume(tmp_path / "big.hrc", dims=(40, 40, 40), frames=1, codec="gdeflate", chunk_size_bytes=1 << 20)
    assert not (tmp_path / "big.hrc").exists()


def test_turbulence_is_divergence_free_at_several_scales_and_stored_as_computed(tmp_path):
    from headrace.generate.flow import from_blocks, turbulence_modes, turbulence_velocity

    h = 1e-3
    axis = np.linspace(0.5, 5.5, 12)
    x, y, z = axis[:, None, None], axis[None, :, None], axis[None, None, :]

    def at(dx, dy, dz):
        return turbulence_velocity(x + dx, y + dy, z + dz, 0.0, seed=3)

    divergence = sum(at(*d)[..., c] - at(*(-v for v in d))[..., c]
                     for c, d in enumerate([(h, 0, 0), (0, h, 0), (0, 0, h)])) / (2 * h)
    gradient = (at(h, 0, 0)[..., 1] - at(-h, 0, 0)[..., 1]) / (2 * h)
    assert np.abs(divergence).max() < 1e-3 * np.abs(gradient).max()
    waves = turbulence_modes(3)[0]
    assert np.linalg.norm(waves, axis=1).max() / np.linalg.norm(waves, axis=1).min() == pytest.approx(32)
    speed = np.sqrt((at(0, 0, 0) ** 2).sum(-1).mean())
    assert 0.7 < speed < 1.3

    dims, block = (16, 16, 8), (8, 8, 4)
    ds = headrace.open(generate_flow(tmp_path / "t.hrc", dims=dims, block=block, seed=3, kind="turbulence"))
    assert ds.attributes["flow"] == "turbulence"
    grid = from_blocks(ds.read(0, "velocity", stored_order=True), dims, block)
    h3 = 2 * np.pi / (np.array(dims) - 1)
    expected = turbulence_velocity(np.arange(16)[None, None, :] * h3[0], np.arange(16)[None, :, None] * h3[1],
                                   np.arange(8)[:, None, None] * h3[2], 0.0, seed=3)
    np.testing.assert_allclose(grid, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(headrace.errors.UsageError, match="--kind"):
        generate_flow(tmp_path / "x.hrc", dims=dims, block=block, kind="lamb")


def _rk4(velocity, points, t0, t1, steps):
    """Points carried by ``velocity(x, y, z, t)`` from t0 to t1 in ``steps`` RK4 steps (the tests' own integrator)."""
    h, t, p = (t1 - t0) / steps, t0, np.array(points, dtype=np.float64)

    def f(q, time):
        return velocity(q[:, 0], q[:, 1], q[:, 2], time)

    for _ in range(steps):
        k1 = f(p, t)
        k2 = f(p + h / 2 * k1, t + h / 2)
        k3 = f(p + h / 2 * k2, t + h / 2)
        k4 = f(p + h * k3, t + h)
        p, t = p + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4), t + h
    return p


def test_the_rotations_paths_are_its_closed_form_and_rk4_converges_to_them_at_order_4():
    start = np.array([[0.5, 0.0, -0.5], [0.0, -0.8, 0.0], [0.3, 0.4, 0.2]])
    exact = flow.rotation_path(start, 0.7, np.array([0.7, 2.7]))
    np.testing.assert_array_equal(exact[0], start)
    assert np.allclose(np.hypot(exact[1][:, 0], exact[1][:, 1]), np.hypot(start[:, 0], start[:, 1]))  # radius kept
    np.testing.assert_allclose(exact[1][:, 2] - start[:, 2], 2.0 * flow.ROTATION_RISE)
    errors_by_steps = [np.abs(_rk4(flow.rotation_velocity, start, 0.7, 2.7, n) - exact[1]).max() for n in (10, 20, 40)]
    assert errors_by_steps[-1] < 1e-6
    for coarse, fine in zip(errors_by_steps, errors_by_steps[1:]):
        assert 12 < coarse / fine < 20  # halving the step: 2^4 = 16 times smaller


def test_the_double_gyre_is_its_stream_functions_and_its_z_paths_are_closed_form():
    x, y, z = np.meshgrid(np.linspace(0.1, 1.9, 7), np.linspace(0.1, 0.9, 5), np.linspace(0.1, 0.9, 3), indexing="ij")
    time, h = 3.3, 1e-6
    swing = flow.GYRE_EPSILON * math.sin(flow.GYRE_OMEGA * time)

    def stream(px, py):  # Shadden et al.'s psi
        return flow.GYRE_A * np.sin(math.pi * (swing * px * px + (1 - 2 * swing) * px)) * np.sin(math.pi * py)

    velocity = flow.double_gyre_velocity(x, y, z, time)
    np.testing.assert_allclose(velocity[..., 0], -(stream(x, y + h) - stream(x, y - h)) / (2 * h), atol=1e-7)
    np.testing.assert_allclose(velocity[..., 1], (stream(x + h, y) - stream(x - h, y)) / (2 * h), atol=1e-7)
    start = np.array([[0.5, 0.5, 0.2], [1.5, 0.3, 0.6]])
    carried = _rk4(flow.double_gyre_velocity, start, 1.0, 6.0, 400)
    np.testing.assert_allclose(carried[:, 2], flow.double_gyre_z(start[:, 2], 1.0, np.array([6.0]))[0], atol=1e-10)
    assert np.all((carried[:, :2] >= 0) & (carried[:, :2] <= [2, 1]))  # the gyres keep their points in the box


@pytest.mark.parametrize(("kind", "velocity", "low", "high", "dt"), [
    ("rotation", flow.rotation_velocity, (-1, -1, -1), (1, 1, 1), 0.1),
    ("double-gyre", flow.double_gyre_velocity, (0, 0, 0), (2, 1, 1), 0.25),
])
def test_an_unsteady_flow_is_written_at_its_frames_times_over_its_box(tmp_path, kind, velocity, low, high, dt):
    dims, block = (9, 6, 5), (4, 4, 4)
    ds = headrace.open(generate_flow(tmp_path / "u.hrc", dims=dims, block=block, frames=4, kind=kind,
                                     dt=None if dt == 0.1 else dt))
    assert [frame.time for frame in ds.frames] == [round(k * dt, 12) for k in range(4)]  # 0.3, not 3 * 0.1
    assert ds.attributes["flow"] == kind and list(ds.attributes["grid_origin"]) == list(low)
    spacing = [(b - a) / (d - 1) for a, b, d in zip(low, high, dims)]
    assert list(ds.attributes["grid_spacing"]) == pytest.approx(spacing)
    assert ds.frames[0].bbox == (tuple(map(float, low)), tuple(map(float, high)))
    z, y, x = np.meshgrid(*(a + np.arange(n) * h for a, n, h in zip(low[::-1], dims[::-1], spacing[::-1])), indexing="ij")
    for frame in (0, 3):
        stored = from_blocks(ds.read(frame, "velocity", stored_order=True), dims, block)
        np.testing.assert_allclose(stored, velocity(x, y, z, ds.frames[frame].time), rtol=1e-6, atol=1e-6)


def test_an_unknown_kind_or_a_time_step_that_is_not_positive_is_refused(tmp_path):
    with pytest.raises(errors.UsageError, match="abc, turbulence, rotation, double-gyre"):
        generate_flow(tmp_path / "x.hrc", dims=(4, 4, 4), kind="lamb")
    for dt in (0.0, -1.0, float("nan")):
        with pytest.raises(errors.UsageError, match="--dt"):
            generate_flow(tmp_path / "x.hrc", dims=(4, 4, 4), kind="rotation", dt=dt)
    assert not (tmp_path / "x.hrc").exists()


def test_flow_is_stored_in_blocks(tmp_path):
    dims, block = (8, 12, 16), (4, 4, 8)
    ds = headrace.open(generate_flow(tmp_path / "f.hrc", dims=dims, block=block, frames=2, seed=9))

    assert [(f.name, f.dtype, f.components) for f in ds.fields] == [("velocity", "float32", 3)]
    assert list(ds.attributes["block_dims"]) == [4, 4, 8]
    assert ds.attributes["layout"] == "blocks"
    spacing = [2 * math.pi / (d - 1) for d in dims]
    assert list(ds.attributes["grid_spacing"]) == pytest.approx(spacing)
    z, y, x = np.meshgrid(*(np.arange(n) * h for n, h in zip(dims[::-1], spacing[::-1])), indexing="ij")
    for frame in range(2):
        stored = ds.read(frame, "velocity", stored_order=True)
        reference = abc_velocity(x, y, z, float(frame), seed=9)
        np.testing.assert_allclose(from_blocks(stored, dims, block), reference, rtol=1e-6, atol=1e-6)
        # Block 0 is the first BX*BY*BZ elements, x fastest inside it.
        np.testing.assert_allclose(stored[: 4 * 4 * 8].reshape(8, 4, 4, 3), reference[:8, :4, :4], rtol=1e-6, atol=1e-6)


def test_flow_chunks_hold_whole_blocks(tmp_path):
    dims, block = (16, 16, 16), (4, 4, 4)
    block_elements = 4 * 4 * 4
    ds = headrace.open(generate_flow(tmp_path / "f.hrc", dims=dims, block=block, chunk_size_bytes=5000))

    table = ds.container.chunk_table()
    counts = [int(count) for count in table["element_count"]]
    firsts = [int(first) for first in table["first_element"]]
    assert len(counts) > 1
    assert all(count % block_elements == 0 for count in counts)
    assert all(first % block_elements == 0 for first in firsts)


def test_block_order_round_trip():
    grid = np.arange(6 * 4 * 8 * 2).reshape(6, 4, 8, 2)
    blocks = to_blocks(grid, (4, 2, 3))

    np.testing.assert_array_equal(from_blocks(blocks, (8, 4, 6), (4, 2, 3)), grid)
    np.testing.assert_array_equal(blocks[:24], grid[:3, :2, :4].reshape(-1, 2))  # block (0, 0, 0)
    np.testing.assert_array_equal(blocks[24:48], grid[:3, :2, 4:8].reshape(-1, 2))  # block (1, 0, 0): x next


def test_flow_steady_by_default(tmp_path):
    ds = headrace.open(generate_flow(tmp_path / "f.hrc", dims=(4, 4, 4), block=(2, 2, 2)))

    assert len(ds.frames) == 1
    assert flow.PERIOD_FRAMES == 16


@pytest.mark.parametrize(
    "call",
    [
        lambda p: generate_particles(p, particles=0, frames=1),
        lambda p: generate_particles(p, particles=10, frames=0),
        lambda p: generate_volume(p, dims=(1, 4, 4), frames=1),
        lambda p: generate_flow(p, dims=(8, 8, 8), block=(0, 4, 4)),
        lambda p: generate_particles(p, particles=10, frames=1, codec="brotli"),
    ],
)
def test_bad_options(tmp_path, call):
    with pytest.raises(errors.UsageError):
        call(tmp_path / "x.hrc")
    assert not list(tmp_path.iterdir())
