"""headrace.Queue through Python: host destinations on the CPU, device destinations on a GPU."""

from __future__ import annotations

import numpy as np
import pytest

import headrace
from headrace import errors


@pytest.mark.parametrize("codec", ["none", "lz4", "zstd", "gdeflate"])
def test_chunks_land_in_host_arrays(codec_files, codec):
    paths, frames = codec_files
    ds = headrace.open(paths[codec])
    with headrace.Queue(backend="posix", staging_bytes=1 << 20) as q:
        f = q.add_file(paths[codec])
        out = [np.empty((30000, 8), np.float32) for _ in frames]
        for t in range(len(frames)):
            q.enqueue_chunks(f, ds, t, "particles", out[t])
        fence = q.enqueue_signal()
        q.submit()
        fence.wait()
        assert fence.is_signaled()
        for t, expected in enumerate(frames):
            np.testing.assert_array_equal(out[t], expected)
        stats = q.stats()
        assert stats.requests.done == sum(1 for _ in ds.container.chunk_table()["offset"])
        assert stats.requests.raw_bytes == ds.raw_bytes


def test_flight_timeline_accounts_for_every_request(codec_files):
    paths, frames = codec_files
    ds = headrace.open(paths["none"])
    with headrace.Queue(staging_bytes=1 << 20) as q:  # the read path: both lanes may take flights
        f = q.add_file(paths["none"])
        out = [np.empty((30000, 8), np.float32) for _ in frames]
        for t in range(len(frames)):
            q.enqueue_chunks(f, ds, t, "particles", out[t])
        q.submit()
        q.drain()
        timeline = q.flight_timeline()
        stats = q.stats()
    assert len(timeline) == stats.disk_lane_flights + stats.cache_lane_flights
    assert sum(f.requests for f in timeline) == stats.requests.done
    assert sum(f.stored_bytes for f in timeline) == stats.requests.stored_bytes
    assert [f.number for f in timeline] == list(range(len(timeline)))
    for f in timeline:
        assert f.lane in (0, 1)
        assert 0 < f.dispatched_s <= f.taken_s <= f.landed_s <= f.checked_s <= f.issued_s <= f.done_s


def test_priority_cancel_and_status(tmp_path):
    data = np.random.default_rng(5).integers(0, 255, 64 * 4096, dtype=np.uint8)
    path = tmp_path / "raw.bin"
    data.tofile(path)
    with headrace.Queue(backend="posix", max_batch=1) as q:
        f = q.add_file(path)
        out = np.full(64 * 4096, 7, np.uint8)
        ids = [q.enqueue(f, i * 4096, 4096, out[i * 4096:(i + 1) * 4096], tag=i % 2) for i in range(63)]
        urgent = q.enqueue(f, 63 * 4096, 4096, out[63 * 4096:], priority=10)
        assert q.cancel_tag(1) == 31
        q.submit()
        q.drain()
        assert q.status(urgent).completion_index == 31  # the 31 cancelled finished first, at cancel time
        for i, request in enumerate(ids):
            status = q.status(request)
            block = out[i * 4096:(i + 1) * 4096]
            if i % 2:
                assert status.state == "cancelled" and np.all(block == 7)
            else:
                assert status.state == "done" and np.array_equal(block, data[i * 4096:(i + 1) * 4096])
        assert q.status(urgent).state == "done"
        done_order = sorted((q.status(r).completion_index, r) for r in ids[::2] + [urgent])
        assert done_order[0][1] == urgent  # queued last, served first


def test_errors_are_per_request_and_named(tmp_path):
    path = tmp_path / "small.bin"
    path.write_bytes(b"x" * 8192)
    with headrace.Queue(backend="posix") as q:
        f = q.add_file(path)
        good, bad = np.empty(4096, np.uint8), np.empty(4096, np.uint8)
        ok = q.enqueue(f, 0, 4096, good)
        past = q.enqueue(f, 1 << 20, 4096, bad, label="beyond the end")
        q.submit()
        q.drain()
        assert q.status(ok).state == "done"
        status = q.status(past)
        assert status.state == "failed" and str(path) in status.message
        with pytest.raises(errors.UsageError, match="NumPy array or expose __cuda_array_interface__"):
            q.enqueue(f, 0, 4096, bytearray(4096))
        with pytest.raises(errors.UsageError, match="needs a queue made for a GPU"):
            class Fake:
                __cuda_array_interface__ = {"shape": (4096,), "typestr": "|u1", "data": (1 << 40, False), "version": 3}
            q.enqueue(f, 0, 4096, Fake())


@pytest.mark.gpu
@pytest.mark.parametrize("codec", ["none", "lz4", "zstd", "gdeflate"])
@pytest.mark.parametrize("decode_on", ["gpu", "cpu"])
@pytest.mark.parametrize("pin_files", [False, True])
def test_chunks_land_in_gpu_memory(codec_files, codec, decode_on, pin_files):
    import cupy

    paths, frames = codec_files
    ds = headrace.open(paths[codec])
    with headrace.Queue(backend="uring", device=0, staging_bytes=4 << 20, decode_on=decode_on,
                        pin_files=pin_files) as q:
        f = q.add_file(paths[codec])
        out = [cupy.full((30000, 8), -1, cupy.float32) for _ in frames]
        for t in range(len(frames)):
            q.enqueue_chunks(f, ds, t, "particles", out[t])
        fence = q.enqueue_signal()
        stream = cupy.cuda.Stream(non_blocking=True)
        with pytest.raises(errors.UsageError, match="submit first"):
            fence.wait_on_stream(stream.ptr)  # event fences: recorded only once submitted
        q.submit()
        fence.wait_on_stream(stream.ptr)
        with stream:
            sums = [float(o.sum()) for o in out]  # queued behind the fence on the consumer stream
        for t, expected in enumerate(frames):
            np.testing.assert_array_equal(cupy.asnumpy(out[t]), expected)  # the CPU reference
            assert sums[t] == pytest.approx(float(expected.astype(np.float64).sum()), rel=1e-4)


@pytest.mark.gpu
@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_value_fences_let_a_stream_wait_before_submit(codec_files, codec):
    import cupy

    paths, frames = codec_files
    ds = headrace.open(paths[codec])
    out = [cupy.full((30000, 8), -1, cupy.float32) for _ in frames]
    for o in out:
        o.sum()  # the reduction kernel loaded now: no module load while a stream waits on a fence
    with pytest.raises(errors.UsageError, match="stream_value_fences needs decode_on = cpu"):
        headrace.Queue(backend="posix", device=0, stream_value_fences=True)
    with headrace.Queue(backend="posix", device=0, decode_on="cpu", stream_value_fences=True) as q:
        f = q.add_file(paths[codec])
        for t in range(len(frames)):
            q.enqueue_chunks(f, ds, t, "particles", out[t])
        fence = q.enqueue_signal()
        stream = cupy.cuda.Stream(non_blocking=True)
        fence.wait_on_stream(stream.ptr)  # fire and forget: before submit, the host does not wait
        with stream:
            sums = [o.sum() for o in out]  # queued behind the fence on the consumer stream
        q.submit()
        stream.synchronize()
        assert "fences=stream-value" in q.describe()
        for t, expected in enumerate(frames):
            assert float(sums[t]) == pytest.approx(float(expected.astype(np.float64).sum()), rel=1e-4)


@pytest.mark.gpu
def test_gpu_cancellation_keeps_neighbours(codec_files):
    import cupy

    paths, frames = codec_files
    ds = headrace.open(paths["lz4"])
    with headrace.Queue(backend="posix", device=0, staging_bytes=1 << 20) as q:
        f = q.add_file(paths["lz4"])
        out = cupy.full((4, 30000, 8), -1, cupy.float32)
        ids = [q.enqueue_chunks(f, ds, t, "particles", out[t], tag=t) for t in range(4)]
        q.cancel_tag(1)
        q.submit()
        q.drain()
        host = cupy.asnumpy(out)
        assert np.all(host[1] == -1) and all(q.status(r).state == "cancelled" for r in ids[1])
        for t in (0, 2, 3):
            np.testing.assert_array_equal(host[t], frames[t])


@pytest.mark.gpu
@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_cufile_reads_straight_into_gpu_memory(codec_files, codec):
    import cupy

    paths, frames = codec_files
    ds = headrace.open(paths[codec])
    with headrace.Queue(backend="cufile", device=0, staging_bytes=4 << 20) as q:
        assert "cufile=" in q.describe()
        try:
            f = q.add_file(paths[codec])
        except errors.UnavailableError as why:  # e.g. a container without /run/udev: cuFile refuses files
            pytest.skip(f"cuFile cannot read this file here: {why}")
        out = cupy.zeros((30000, 8), cupy.float32)
        ids = q.enqueue_chunks(f, ds, 2, "particles", out)
        q.enqueue_signal()
        q.submit()
        q.drain()
        assert all(q.status(r).state == "done" for r in ids), [q.status(r).message for r in ids]
        # Uncompressed chunks are read by cuFile itself, never DMA'd from page-locked pages (which once
        # marked them done without a copy: zeros).
        sources = {q.status(r).source for r in ids}
        assert (sources == {"cufile"}) if codec == "none" else ("cufile" not in sources), sources
        np.testing.assert_array_equal(cupy.asnumpy(out), frames[2])


@pytest.mark.gpu
def test_gpu_path_fails_a_corrupt_zstd_chunk_by_its_checksum(codec_files, tmp_path):
    import cupy

    paths, _ = codec_files
    ds = headrace.open(paths["zstd"])
    table = ds.container.chunk_table()
    victim = int(np.flatnonzero(table["frame"] == 1)[0])
    damaged = tmp_path / "damaged.hrc"
    raw = bytearray(paths["zstd"].read_bytes())
    raw[int(table["offset"][victim]) + 8] ^= 0xFF
    damaged.write_bytes(bytes(raw))
    with headrace.Queue(backend="posix", device=0, staging_bytes=4 << 20) as q:
        f = q.add_file(damaged)
        out = cupy.zeros((30000, 8), cupy.float32)
        ids = q.enqueue_chunks(f, ds, 1, "particles", out)
        q.submit()
        q.drain()
        states = [q.status(r) for r in ids]
        assert states[0].state == "failed" and "checksum" in states[0].message
        assert all(s.state == "done" for s in states[1:])
