"""Fields as arrays (docs/arrays.md): natural shapes for every layout, regions that read only their chunks,
out=, negative frames, and lazy FieldArray / dask / xarray views that read nothing until computed."""

from __future__ import annotations

import math
import pickle
import sys

import numpy as np
import pytest

import headrace
from headrace import FieldSpec, _ext, arrays, container, errors
from headrace.workloads import streamlines
from headrace.generate import generate_flow, generate_volume
from headrace.generate.flow import abc_velocity, from_blocks


@pytest.fixture
def chunk_log(monkeypatch):
    """Every chunk a partial read asks for, and every whole-field read: [("chunks", [ids]) | ("field", frame)]."""
    log: list[tuple[str, object]] = []
    chunk_reader, field_reader = arrays.read_chunks, _ext.read_field

    def counting_chunks(dataset, chunks, destinations, **options):
        log.append(("chunks", list(chunks)))
        chunk_reader(dataset, chunks, destinations, **options)

    def counting_field(container, backend, frame, field, destination, verify):
        log.append(("field", frame))
        field_reader(container, backend, frame, field, destination, verify)

    monkeypatch.setattr(arrays, "read_chunks", counting_chunks)
    monkeypatch.setattr(_ext, "read_field", counting_field)
    return log


def chunks_read(log) -> list[int]:
    return [chunk for kind, chunks in log if kind == "chunks" for chunk in chunks]  # type: ignore[union-attr]


def frames_read(ds, log) -> set[int]:
    """The frames a log's reads came from."""
    table_frames = ds.container.chunk_table()["frame"]
    return {int(frame) for kind, frame in log if kind == "field"} | {int(table_frames[c]) for c in chunks_read(log)}


def abc_grid(dims, time, seed) -> np.ndarray:
    """The generator's own values on its grid, (z, y, x, 3) float32."""
    z, y, x = np.meshgrid(*(np.arange(n) * (2 * math.pi / (n - 1)) for n in dims[::-1]), indexing="ij")
    return abc_velocity(x, y, z, time, seed=seed).astype(np.float32)


@pytest.fixture(scope="module")
def flows(tmp_path_factory):
    """One ABC flow (2 frames) in native blocks and in the Hilbert layout, each with small chunks, on a
    grid the blocks and partitions divide and on one they do not; returns {name: path}, {name: dims}."""
    tmp_path = tmp_path_factory.mktemp("flows")
    paths, dims = {}, {}
    for grid, size in (("even", (32, 32, 16)), ("partial", (29, 22, 13))):
        blocks = generate_flow(tmp_path / f"{grid}-blocks.hrc", dims=size, block=(4, 4, 4), frames=2, seed=9,
                               chunk_size_bytes=4096)
        hilbert = tmp_path / f"{grid}-hilbert.hrc"
        streamlines.convert_to_hilbert(blocks, hilbert, bits=2, chunk_pages=3)
        paths[f"{grid}-blocks"], paths[f"{grid}-hilbert"] = blocks, hilbert
        dims[f"{grid}-blocks"] = dims[f"{grid}-hilbert"] = size
    return paths, dims


@pytest.mark.parametrize("grid", ["even", "partial"])
def test_blocks_and_hilbert_read_as_the_generated_grid(flows, grid):
    paths, dims = flows
    size = dims[f"{grid}-blocks"]
    blocks, hilbert = headrace.open(paths[f"{grid}-blocks"]), headrace.open(paths[f"{grid}-hilbert"])
    assert blocks.attributes["layout"] == "blocks" and hilbert.attributes["layout"] == "hilbert"
    for frame in range(2):
        natural = blocks.read(frame, "velocity")
        assert natural.shape == (size[2], size[1], size[0], 3) == blocks.shape(frame, "velocity")
        np.testing.assert_array_equal(natural, abc_grid(size, float(frame), seed=9))
        np.testing.assert_array_equal(hilbert.read(frame, "velocity"), natural)
        stored = blocks.read(frame, "velocity", stored_order=True)  # the raw order: blocks, padding included
        assert stored.shape == (blocks.element_count(frame, "velocity"), 3)
        np.testing.assert_array_equal(from_blocks(stored, size, (4, 4, 4)), natural)
    if grid == "partial":
        assert blocks.element_count(0, "velocity") == 32 * 24 * 16 > 29 * 22 * 13  # edge blocks stored whole


def test_grid_order_containers_read_as_z_y_x(tmp_path):
    """A scalar grid drops its one component; a vector grid keeps its axis; BOV, .npy and generated
    volumes alike; the blocks and Hilbert layouts made from grid order read the same as it."""
    from headrace.convert import convert

    vectors = np.random.default_rng(1).random((6, 8, 12, 3)).astype(np.float32)  # (z, y, x, c)
    scalars = np.random.default_rng(2).random((5, 4, 3))
    np.save(tmp_path / "v.npy", vectors)
    np.save(tmp_path / "s.npy", scalars)
    linear = headrace.open(convert(tmp_path / "v.npy", tmp_path / "v.hrc", field="velocity", components=3))
    assert linear.attributes["layout"] == "linear"
    np.testing.assert_array_equal(linear.read(0, "velocity"), vectors)
    np.testing.assert_array_equal(headrace.open(convert(tmp_path / "s.npy", tmp_path / "s.hrc")).read(0), scalars)
    for layout, options in (("blocks", dict(block=(5, 3, 4))), ("hilbert", dict(bits=2, chunk_pages=3))):
        streamlines.convert_linear_flow(tmp_path / "v.hrc", tmp_path / f"{layout}.hrc", layout=layout, **options)
        rearranged = headrace.open(tmp_path / f"{layout}.hrc")
        assert rearranged.attributes["layout"] == layout
        np.testing.assert_array_equal(rearranged.read(0), vectors)
    volume = headrace.open(generate_volume(tmp_path / "vol.hrc", dims=(17, 9, 6), frames=2, seed=5))
    values = volume.read(1, "scalar")
    assert values.shape == (6, 9, 17)
    np.testing.assert_array_equal(values.reshape(-1, 1), volume.read(1, "scalar", stored_order=True))


def test_particles_keep_elements_by_components(particle_file):
    path, frames = particle_file
    ds = headrace.open(path)
    assert ds.read(1, "particles").shape == (5000, 8) == ds.shape(1, "particles")
    np.testing.assert_array_equal(ds.read(1, "particles"), frames[1])
    np.testing.assert_array_equal(ds.read(1, "particles", stored_order=True), frames[1])


BOXES = [
    (slice(1, 4), slice(2, 7), slice(3, 11)),
    (slice(None), slice(5, 6)),
    (2, slice(None), -1),
    (slice(-3, None), slice(0, 1), slice(4, 5)),
    (slice(0, 1),),
    (slice(3, 3),),  # empty: reads nothing
]


@pytest.mark.parametrize("name", ["even-blocks", "even-hilbert", "partial-blocks", "partial-hilbert"])
@pytest.mark.parametrize("box", BOXES)
def test_a_box_of_a_flow_field_is_the_full_reads_slice_and_reads_fewer_chunks(flows, chunk_log, name, box):
    paths, _ = flows
    ds = headrace.open(paths[name])
    full = ds.read(1, "velocity")
    chunk_log.clear()
    part = ds.read(1, "velocity", region=box)
    np.testing.assert_array_equal(part, full[box])
    assert part.shape == ds.shape(1, "velocity", region=box)
    read = chunks_read(chunk_log)
    _, first, count = ds.container.frame_field(1, 0)
    assert len(read) == len(set(read)) < count  # each chunk once, and not all of them
    assert all(first <= c < first + count for c in read)
    assert ("field", 1) not in chunk_log


def test_a_box_of_a_compressed_volume_reads_only_its_chunks(tmp_path, chunk_log):
    """Proof by corruption: a damaged chunk outside the box is never read; one inside fails the read."""
    path = generate_volume(tmp_path / "v.hrc", dims=(16, 16, 16), frames=2, seed=3, codec="zstd", chunk_size_bytes=4096)
    ds = headrace.open(path)
    full = ds.read(1, "scalar")
    box = (slice(4, 6), slice(3, 9), slice(2, 14))  # planes 4 and 5 of frame 1
    table = ds.container.chunk_table()
    _, first, count = ds.container.frame_field(1, 0)
    plane_bytes = 16 * 16 * 4
    inside = [c for c in range(first, first + count)
              if table["first_element"][c] * 4 < 6 * plane_bytes
              and (table["first_element"][c] + table["element_count"][c]) * 4 > 4 * plane_bytes]
    chunk_log.clear()
    np.testing.assert_array_equal(ds.read(1, "scalar", region=box), full[box])
    assert sorted(chunks_read(chunk_log)) == inside and len(inside) < count
    outside = next(c for c in range(first, first + count) if c not in inside)
    with open(path, "r+b") as f:
        f.seek(int(table["offset"][outside]) + 8)
        f.write(b"\xff\xff\xff\xff")
    damaged = headrace.open(path)
    np.testing.assert_array_equal(damaged.read(1, "scalar", region=box), full[box])
    with pytest.raises(errors.ChecksumMismatchError):
        damaged.read(1, "scalar")
    with open(path, "r+b") as f:
        f.seek(int(table["offset"][inside[0]]) + 8)
        f.write(b"\xff\xff\xff\xff")
    with pytest.raises(errors.ChecksumMismatchError):
        headrace.open(path).read(1, "scalar", region=box)


def test_a_range_of_particles_reads_only_its_chunks(particle_file, chunk_log):
    path, frames = particle_file
    ds = headrace.open(path)
    table = ds.container.chunk_table()
    _, first, count = ds.container.frame_field(2, 0)
    assert count == 10  # 512 particles a chunk
    for region, lo, hi in [(slice(600, 1500), 600, 1500), (slice(-10, None), 4990, 5000), ((slice(512, 1024),), 512, 1024),
                           (7, 7, 8)]:
        chunk_log.clear()
        np.testing.assert_array_equal(ds.read(2, "particles", region=region), frames[2][lo:hi].reshape(
            ds.shape(2, "particles", region=region)))
        overlapping = [c for c in range(first, first + count) if table["first_element"][c] < hi
                       and table["first_element"][c] + table["element_count"][c] > lo]
        assert sorted(chunks_read(chunk_log)) == overlapping and len(overlapping) < count
    chunk_log.clear()
    assert ds.read(2, "particles", region=slice(100, 100)).shape == (0, 8) and chunk_log == []


def test_linear_z_slabs_and_whole_fields_read_straight_into_the_result(tmp_path, chunk_log):
    ds = headrace.open(generate_volume(tmp_path / "v.hrc", dims=(8, 8, 8), frames=1, seed=1, chunk_size_bytes=4096))
    full = ds.read(0, "scalar")
    assert chunk_log == [("field", 0)]
    chunk_log.clear()
    np.testing.assert_array_equal(ds.read(0, "scalar", region=(slice(2, 4),)), full[2:4])
    assert len(chunks_read(chunk_log)) == 1  # planes 2 and 3 are bytes 512..1023: one 4 KiB chunk


def test_out_is_filled_and_checked(flows, particle_file):
    paths, _ = flows
    ds = headrace.open(paths["even-hilbert"])
    out = np.full((16, 32, 32, 3), np.nan, np.float32)
    assert ds.read(0, "velocity", out=out) is out
    np.testing.assert_array_equal(out, ds.read(0, "velocity"))
    box = np.empty((2, 32, 3), np.float32)
    assert ds.read(0, "velocity", region=(slice(1, 3), 4), out=box) is box
    np.testing.assert_array_equal(box, out[1:3, 4])
    particles = headrace.open(particle_file[0])
    rows = np.empty((100, 8), np.float32)
    particles.read(0, "particles", region=slice(4950, 5050), out=rows[:50])
    np.testing.assert_array_equal(rows[:50], particle_file[1][0][4950:])
    for bad, said in [(np.empty((16, 32, 32, 3), np.float64), "dtype float64"),
                      (np.empty((16, 32, 32), np.float32), r"shape \(16, 32, 32\)"),
                      (np.empty((16, 32, 32, 6), np.float32)[..., ::2], "not C-contiguous"),
                      ([0.0] * 3, "list")]:
        with pytest.raises(errors.UsageError, match=r"out= for frame 0 field 'velocity': expected .*\(16, 32, 32, 3\) and "
                                                    rf"dtype float32, got .*{said}") as caught:
            ds.read(0, "velocity", out=bad)  # type: ignore[arg-type]
        assert "\n" not in str(caught.value)


def test_negative_frames_count_from_the_end(particle_file):
    path, frames = particle_file
    ds = headrace.open(path)
    np.testing.assert_array_equal(ds.read(-1, "particles"), frames[2])
    np.testing.assert_array_equal(ds.read(-3, "particles", region=slice(0, 5)), frames[0][:5])
    assert ds.element_count(-2, "particles") == 5000 and ds.shape(-1, "particles") == (5000, 8)
    for frame in (3, -4):
        with pytest.raises(errors.UsageError, match=rf"^frame {frame} out of range: .*particles.hrc has 3 frames "
                                                    r"\(0 to 2, or -3 to -1 from the end\)$"):
            ds.read(frame, "particles")
    with pytest.raises(errors.UsageError, match="expected an integer frame index"):
        ds.read(1.0, "particles")  # type: ignore[arg-type]


def test_bad_regions_are_one_line_usage_errors(flows, particle_file):
    ds = headrace.open(flows[0]["even-blocks"])
    for region, said in [((slice(0, 8, 2),), "steps of 1"), ((0, 0, 0, 0), "at most 3"), ((16,), "z index 16 out of range for 16 z points"),
                         ((0, "a"), "region y: expected an integer or a slice")]:
        with pytest.raises(errors.UsageError, match=said):
            ds.read(0, "velocity", region=region)  # type: ignore[arg-type]
    with pytest.raises(errors.UsageError, match="region element 5000 out of range for 5000 elements"):
        headrace.open(particle_file[0]).read(0, "particles", region=5000)


def test_field_array_indexes_like_numpy_and_reads_only_its_box(flows, chunk_log):
    ds = headrace.open(flows[0]["even-hilbert"])
    array = ds.array("velocity")
    assert chunk_log == [] and array.shape == (2, 16, 32, 32, 3) and array.dtype == np.float32 and len(array) == 2
    whole = np.stack([ds.read(t, "velocity") for t in range(2)])
    chunk_log.clear()
    for key in [(-1, slice(1, 3)), (0, 2, slice(None, None, 3), slice(15, 2, -4), 1), (slice(None), 0, 0, 0),
                (Ellipsis, 2), (1, Ellipsis, slice(0, 2)), (slice(1, None), slice(6, 7), -1),
                ([1, 0, 1], 3), (0, [3, 1, 3], slice(2, 5), [4, 4, 0]), (slice(None), 0, np.arange(32) % 3 == 0),
                (0, [], 0), (slice(None, None, -1), -1, -1, -1)]:
        np.testing.assert_array_equal(array[key], whole[key])
    assert all(kind == "chunks" for kind, _ in chunk_log)  # boxes only, never a whole frame
    assert array[slice(2, 2)].shape == (0, 16, 32, 32, 3)
    again = pickle.loads(pickle.dumps(array))  # by path: dask's process schedulers
    np.testing.assert_array_equal(again[1, 3], whole[1, 3])


def test_dask_reads_frames_only_when_computed(flows, chunk_log):
    dask_array = pytest.importorskip("dask.array")
    ds = headrace.open(flows[0]["partial-blocks"])
    lazy = ds.to_dask("velocity")
    sliced = lazy[-1, 2:5, :, 3]
    total = (lazy * 2).sum()
    assert chunk_log == []
    assert isinstance(lazy, dask_array.Array) and lazy.shape == (2, 13, 22, 29, 3) and lazy.chunks[0] == (1, 1)
    expected_slice = ds.read(1, "velocity")[2:5, :, 3]
    chunk_log.clear()
    np.testing.assert_array_equal(sliced.compute(), expected_slice)
    assert frames_read(ds, chunk_log) == {1} and ("field", 1) not in chunk_log  # dask passed the box down
    chunk_log.clear()
    expected = sum(2 * ds.read(t, "velocity").astype(np.float64).sum() for t in range(2))
    assert float(total.compute()) == pytest.approx(expected, rel=1e-5)
    np.testing.assert_array_equal(lazy.compute(), np.stack([ds.read(t, "velocity") for t in range(2)]))


def test_xarray_has_time_grid_coordinates_and_reads_lazily(tmp_path, chunk_log):
    pytest.importorskip("xarray")
    path = tmp_path / "grid.hrc"
    origin, spacing = [1.0, -2.0, 0.5], [0.5, 0.25, 2.0]
    grids = [np.random.default_rng(t).random((4, 3, 5, 3)).astype(np.float32) for t in range(3)]
    with headrace.Writer(path, [FieldSpec("velocity", "float32", 3), FieldSpec("pressure", "float64", 1)],
                         chunk_size_bytes=4096) as w:
        for key, value in dict(grid_dims=[5, 3, 4], grid_origin=origin, grid_spacing=spacing, layout="linear").items():
            w.set_attribute(key, value)
        for t, grid in enumerate(grids):
            frame = w.add_frame(time=0.25 * t)
            w.write(frame, "velocity", grid.reshape(-1, 3))
            w.write(frame, "pressure", grid[..., 0].astype(np.float64).reshape(-1))
    ds = headrace.open(path)
    data = ds.to_xarray()
    assert chunk_log == []
    assert data["velocity"].dims == ("time", "z", "y", "x", "component")
    assert data["pressure"].dims == ("time", "z", "y", "x")
    np.testing.assert_array_equal(data["time"].values, [0.0, 0.25, 0.5])
    np.testing.assert_array_equal(data["frame"].values, [0, 1, 2])
    np.testing.assert_array_equal(data["x"].values, 1.0 + 0.5 * np.arange(5))
    np.testing.assert_array_equal(data["z"].values, 0.5 + 2.0 * np.arange(4))
    assert list(data.attrs["grid_dims"]) == [5, 3, 4]
    picked = data["pressure"].sel(time=0.5).isel(z=slice(1, 3))
    assert chunk_log == []
    np.testing.assert_array_equal(picked.values, grids[2][1:3, ..., 0])
    assert frames_read(ds, chunk_log) == {2}
    np.testing.assert_array_equal(data["velocity"].values, np.stack(grids))


def test_xarray_of_particles_and_ragged_counts(tmp_path, particle_file):
    pytest.importorskip("xarray")
    data = headrace.open(particle_file[0]).to_xarray()
    assert data["particles"].dims == ("time", "element", "component") and data["particles"].shape == (3, 5000, 8)
    np.testing.assert_array_equal(data["particles"].isel(time=1, element=slice(10, 20)).values, particle_file[1][1][10:20])
    path = tmp_path / "ragged.hrc"
    with headrace.Writer(path, [FieldSpec("particles", "float32", 8)]) as w:
        for t, count in enumerate((10, 25)):
            w.write(w.add_frame(time=float(t)), "particles", np.ones((count, 8), np.float32))
    ragged = headrace.open(path)
    with pytest.raises(errors.UsageError, match="field 'particles' holds 10 to 25 elements a frame"):
        ragged.to_dask("particles")
    np.testing.assert_array_equal(ragged.array("particles")[1, -5:], np.ones((5, 8), np.float32))


def test_lazy_arrays_say_what_is_missing(particle_file, monkeypatch):
    ds = headrace.open(particle_file[0])
    monkeypatch.setitem(sys.modules, "dask.array", None)
    with pytest.raises(ImportError, match=r"Dataset.to_dask needs dask, which is not installed \(pip install dask\)"):
        ds.to_dask("particles")
    monkeypatch.setitem(sys.modules, "xarray", None)
    with pytest.raises(ImportError, match="Dataset.to_xarray needs xarray"):
        ds.to_xarray()



@pytest.mark.parametrize("backend", ["posix", "direct", "mmap", "uring", "ram"])
def test_boxes_and_ranges_read_through_every_host_backend(flows, particle_file, backend):
    path = flows[0]["partial-hilbert"]
    reason = _ext.backend_unavailable_reason(backend, str(path))
    if reason is not None:
        pytest.skip(f"{backend}: {reason}")
    ds = headrace.open(path)
    box = (slice(3, 9), slice(None, 7), slice(20, None))
    np.testing.assert_array_equal(ds.read(1, "velocity", region=box, backend=backend, threads=2),
                                  ds.read(1, "velocity")[box])
    particles = headrace.open(particle_file[0])
    np.testing.assert_array_equal(particles.read(0, "particles", region=slice(700, 2100), backend=backend),
                                  particle_file[1][0][700:2100])
    ds.close()
    assert ds.read(0, "velocity", region=(0,), backend=backend).shape == (22, 29, 3)  # reopened after close


def test_xarray_names_a_fields_own_axes_where_fields_disagree(tmp_path):
    pytest.importorskip("xarray")
    path = tmp_path / "mixed.hrc"
    positions = np.arange(40, dtype=np.float32).reshape(10, 4)
    with headrace.Writer(path, [FieldSpec("particles", "float32", 4), FieldSpec("id", "int64", 1),
                                FieldSpec("tracers", "float32", 4)]) as w:
        for t in range(2):
            frame = w.add_frame(time=float(t))
            w.write(frame, "particles", positions + t)
            w.write(frame, "id", np.arange(10, dtype=np.int64))
            w.write(frame, "tracers", np.ones((3, 4), np.float32))
    data = headrace.open(path).to_xarray()
    assert data["particles"].dims == ("time", "particles_element", "particles_component")
    assert data["id"].dims == ("time", "id_element", "id_component")
    assert data["tracers"].dims == ("time", "tracers_element", "tracers_component")
    same = headrace.open(path).to_xarray(["particles", "id"])  # one element count: a shared axis
    assert same["particles"].dims == ("time", "element", "particles_component")
    assert same["id"].dims == ("time", "element", "id_component")
    np.testing.assert_array_equal(same["particles"].values[1], positions + 1)


def test_a_dataset_pickles_by_path_and_the_moved_names_still_answer_with_a_warning(tmp_path):
    ds = headrace.open(generate_volume(tmp_path / "v.hrc", dims=(8, 8, 8), frames=1, seed=1))
    again = pickle.loads(pickle.dumps(ds))
    assert again is not ds and again.path == ds.path and np.array_equal(again.read(0), ds.read(0))
    with pytest.deprecated_call(match="headrace.container.ChunkReader"):
        moved = arrays.ChunkReader
    assert moved is container.ChunkReader
    with pytest.deprecated_call(match="VolumeRenderer"):
        renderer = ds.volume(device="cpu", width=16, height=12)
    assert renderer.render(0).shape == (12, 16, 4)
