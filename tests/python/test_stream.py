"""The frame streamer: order, loop, seek, prefetch, zero-copy hand-off; host memory here, GPU memory
where there is one (compared with the CPU reference)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import headrace
from headrace.cli.main import main


@pytest.mark.parametrize("prefetch", [1, 2, 3])
@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_frames_arrive_in_order_with_the_right_bytes(codec_files, prefetch, codec):
    paths, frames = codec_files
    ds = headrace.open(paths[codec])
    seen = []
    with ds.stream(device="cpu", prefetch=prefetch, backend="posix", loop=2) as stream:
        for frame in stream:
            values = np.from_dlpack(frame["particles"])  # zero-copy view of the slot
            np.testing.assert_array_equal(values, frames[frame.index])
            assert frame.time == float(frame.index)
            seen.append(frame.index)
        assert len(stream.history) == 8
        assert all(s.raw_bytes == 30000 * 32 for s in stream.history)
    assert seen == [0, 1, 2, 3, 0, 1, 2, 3]


def test_seek_restarts_at_any_frame(codec_files):
    paths, frames = codec_files
    ds = headrace.open(paths["lz4"])
    stream = ds.stream(device="cpu", prefetch=2, backend="posix")
    first = next(stream)
    assert first.index == 0
    stream.seek(3)
    assert first.released  # its buffers went back
    with pytest.raises(headrace.UsageError, match="was released"):
        first["particles"]
    jumped = next(stream)
    assert jumped.index == 3
    np.testing.assert_array_equal(np.asarray(jumped["particles"]), frames[3])
    with pytest.raises(StopIteration):
        next(stream)
    with pytest.raises(headrace.UsageError, match="out of range"):
        stream.seek(4)
    stream.close()


@pytest.mark.parametrize("prefetch", [1, 3])
@pytest.mark.parametrize("codec", ["none", "zstd"])
@pytest.mark.parametrize("take", ["asarray", "from_dlpack", "numpy"])
def test_arrays_collected_the_natural_way_hold_their_own_frames(codec_files, prefetch, codec, take):
    paths, frames = codec_files
    ds = headrace.open(paths[codec])
    taken = {"asarray": np.asarray, "from_dlpack": np.from_dlpack, "numpy": lambda field: field.numpy()}[take]
    with ds.stream(device="cpu", prefetch=prefetch, loop=2) as stream:
        collected = [taken(f["particles"]) for f in stream]
        assert stream.kept_frames == 8  # each released by the loop (the last at its end) while kept
    assert len(collected) == 8
    for index, values in enumerate(collected):
        np.testing.assert_array_equal(values, frames[index % 4])


def test_a_loop_that_keeps_only_its_latest_array_reuses_the_buffers(codec_files, monkeypatch):
    paths, frames = codec_files
    ds = headrace.open(paths["none"])
    stream = ds.stream(device="cpu", prefetch=2, loop=5)
    made = []
    allocate = stream._allocate
    monkeypatch.setattr(stream, "_allocate", lambda: made.append(1) or allocate())
    for frame in stream:
        values = np.asarray(frame["particles"])  # alive until the next iteration rebinds it
        np.testing.assert_array_equal(values, frames[frame.index])
    stream.close()
    assert stream.kept_frames == 20 and len(made) == 1  # one set more than the slots, then reused


def test_a_host_frame_released_by_its_caller_keeps_the_arrays_taken_before(codec_files):
    # Issue 35: np.asarray(frame["x"]) taken before frame.release() showed another frame's values afterwards.
    paths, frames = codec_files
    ds = headrace.open(paths["none"])
    with ds.stream(device="cpu", prefetch=2) as stream:
        frame = next(stream)
        view = np.asarray(frame["particles"])
        assert np.shares_memory(view, stream._slots[0].buffers["particles"])  # zero-copy until released
        frame.release()
        assert stream.kept_frames == 1
        later = [f.index for f in stream]  # every other frame passes through the slots
        assert later == [1, 2, 3]
        np.testing.assert_array_equal(view, frames[0])


def test_a_frame_released_by_its_caller_with_nothing_taken_refuses_its_fields(codec_files):
    paths, _ = codec_files
    ds = headrace.open(paths["none"])
    with ds.stream(device="cpu", prefetch=2) as stream:
        frame = next(stream)
        frame.release()
        with pytest.raises(headrace.UsageError, match="frame 0 was released"):
            frame["particles"]
        assert stream.kept_frames == 0


def test_bad_arguments(codec_files):
    paths, _ = codec_files
    ds = headrace.open(paths["none"])
    with pytest.raises(headrace.UsageError, match="prefetch"):
        ds.stream(device="cpu", prefetch=0)
    with pytest.raises(headrace.UsageError, match="no field 'velocity'"):
        ds.stream(["velocity"], device="cpu")
    if headrace._ext.gpu_count() == 0:
        with pytest.raises(headrace.errors.UnavailableError, match="use device='cpu'"):
            ds.stream(device=0)


def test_stream_command_reports_rates(codec_files, capsys, tmp_path):
    paths, _ = codec_files
    csv_path = tmp_path / "frames.csv"
    assert main(["stream", str(paths["zstd"]), "--device", "cpu", "--backend", "posix", "--loop", "2", "--stats",
                 "--csv", str(csv_path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["frames"] == 8 and summary["raw_bytes"] == 8 * 30000 * 32
    assert summary["compression_ratio"] > 1.0 and summary["delivered_gbps"] > summary["disk_gbps"]
    assert len(summary["per_frame"]) == 8
    assert summary["decode_s_per_frame"]["mean"] > 0 and summary["h2d_s_per_frame"]["max"] == 0  # CPU: no copies
    assert csv_path.read_text().count("\n") == 9
    assert summary["cpu_user_s"] + summary["cpu_system_s"] > 0
    assert summary["cpu_s_per_gb"] == pytest.approx((summary["cpu_user_s"] + summary["cpu_system_s"]) / (summary["raw_bytes"] / 1e9))
    by_stage = summary["cpu_s_per_gb_by_stage"]
    assert set(by_stage) == {"io", "finish", "engine", "other"} and min(by_stage.values()) >= 0
    assert by_stage["io"] > 0 and by_stage["finish"] > 0  # the readers' preads; zstd decoded by the checkers


def test_cpu_by_stage_counts_the_engines_threads_by_their_names(codec_files):
    from headrace.measurement import CpuByStage, cpu_by_stage

    paths, _ = codec_files
    ds = headrace.open(paths["zstd"])
    with ds.stream(device="cpu", options=headrace.queue_options(backend="posix")) as frames:
        before = cpu_by_stage()
        for frame in frames:
            frame.release()
        spent = cpu_by_stage().since(before)
    assert spent["io"] > 0 and spent["finish"] > 0
    # what no named thread spent is the rest, never below nothing
    assert CpuByStage(2.0, {"io": 1.5}).since(CpuByStage(1.0, {"io": 1.0})) == {"io": 0.5, "finish": 0.0, "engine": 0.0,
                                                                                   "other": 0.5}
    assert CpuByStage(1.0, {"io": 3.0}).since(CpuByStage(1.0, {"io": 1.0}))["other"] == 0.0


def test_stream_command_refuses_pinned_files_without_a_gpu(codec_files, capsys):
    paths, _ = codec_files
    assert main(["stream", str(paths["none"]), "--device", "cpu", "--pin-files", "on"]) == 2
    assert "pin_files" in capsys.readouterr().err


def test_streams_share_one_engine_and_a_second_stream_opens_nothing(codec_files):
    paths, frames = codec_files
    headrace.release_engines()  # an engine of this test's own: earlier tests' streams leave spare slots of other sizes
    ds = headrace.open(paths["none"])
    with ds.stream(device="cpu") as first:
        assert [f.index for f in first] == [0, 1, 2, 3]
        engine, file = first.engine, first._file
    spare = engine.memory()["spare_slot_bytes"]
    assert spare >= 3 * 30000 * 32  # the closed stream's three slots, kept for the next
    with ds.stream(device="cpu") as second:
        assert second.engine is engine and second._file == file  # the queue and the open file reused
        assert engine.memory()["spare_slot_bytes"] == 0  # and the slots: nothing allocated
        np.testing.assert_array_equal(np.asarray(next(second)["particles"]), frames[0])
    assert headrace.shared_engine("cpu") is engine
    with ds.stream(device="cpu", backend="posix") as other:
        assert other.engine is not engine  # other options: an engine of their own
    assert "read-path=auto" in engine.describe() and "posix (forced)" in other.engine.describe()
    assert engine.close_file(paths["none"]) and not engine.close_file(paths["none"])
    headrace.release_engines()
    assert headrace.shared_engine("cpu") is not engine


def test_frames_say_where_their_bytes_came_from(codec_files):
    paths, _ = codec_files
    ds = headrace.open(paths["zstd"])
    headrace.release_engines()
    with open(paths["zstd"], "rb") as warm:  # into the page cache (another test may have dropped it)
        warm.read()
    with ds.stream(device="cpu") as stream:
        for frame in stream:
            assert frame.stats.bytes_from_cache == frame.stats.stored_bytes > 0
            assert frame.stats.bytes_from_disk == 0
    assert stream.stats()["queue"].requests.bytes_from_cache == ds.stored_bytes


@pytest.mark.parametrize("policy, kept", [("keep", True), ("auto", False)])
def test_a_file_streamed_with_cache_keep_is_cached_for_its_next_pass(tmp_path, policy, kept):
    from headrace import _ext
    from headrace.page_cache import evict_from_page_cache

    path = tmp_path / "series.hrc"
    with headrace.Writer(path, [headrace.FieldSpec("v", "float32", 1)], chunk_size_bytes=64 << 10) as writer:
        for frame in range(4):
            writer.write(writer.add_frame(float(frame)), "v", np.arange(100_000, dtype=np.float32) + frame)
    size = path.stat().st_size
    if evict_from_page_cache([str(path)]) != "fadvise":
        pytest.skip("this file system keeps evicted pages")
    headrace.release_engines()
    with headrace.open(path).stream(device="cpu", cache_policy=policy) as stream:
        sums = [float(np.asarray(frame["v"]).sum()) for frame in stream]
        described = stream.describe()
    assert sums == [float((np.arange(100_000, dtype=np.float32) + f).sum()) for f in range(4)]
    if "O_DIRECT unavailable" in described:
        pytest.skip("no O_DIRECT on this file system: every read is buffered")
    assert ("cache kept: its" in described) == kept, described
    # keep: the first pass left the frames cached; auto read them O_DIRECT and left the cache alone
    resident = _ext.page_cache_resident_bytes(str(path))
    assert resident >= 0.9 * size if kept else resident < 0.5 * size, (resident, size)


def test_per_frame_cost_stays_flat_over_ten_thousand_frames(tmp_path):
    """The queue keeps no growing history: the last thousand frames cost what the first thousand did.
    Cost is the process's CPU time (every thread's) per block of a thousand frames: wall time on a 2-core
    machine is mostly how soon a thread is woken, which varies 2 x from block to block; a history that
    grew (statistics copied per frame, scans of every request) made the last frames 11 x slower."""
    import gc
    import time

    path = tmp_path / "small.hrc"
    with headrace.Writer(path, [headrace.FieldSpec("particles", "float32", 8)]) as w:
        for t in range(1000):
            w.write(w.add_frame(time=float(t)), "particles", np.full((64, 8), t, np.float32))
    # The clock counts every thread of the process: engines that earlier tests left behind go first. The
    # collector stays off while it runs: a full collection walks every object the process holds (the
    # libraries earlier tests imported), a cost of the process, not of the stream's history.
    headrace.release_engines()
    gc.collect()
    gc.disable()
    ds = headrace.open(path)
    blocks = []
    try:
        with ds.stream(device="cpu", loop=10) as stream:
            start = time.process_time()
            for count, frame in enumerate(stream, 1):
                frame.release()
                if count % 1000 == 0:
                    now = time.process_time()
                    blocks.append(now - start)
                    start = now
            assert stream.stats()["queue"].retained_requests <= 1 << 16
    finally:
        gc.enable()
    assert len(blocks) == 10
    first, final = np.median(blocks[:3]), np.median(blocks[-3:])
    assert final < 1.5 * first, f"CPU seconds per thousand frames: first {first:.3f}, last {final:.3f} ({blocks})"


@pytest.mark.gpu
def test_gpu_small_frames_from_a_pinned_file_land_in_their_own_slots(tmp_path):
    """One chunk a frame, frames in slots of their own: copies from a page-locked file must not merge
    across two allocations (cuMemcpy2D refused them: CUDA_ERROR_INVALID_VALUE)."""
    import cupy

    path = tmp_path / "small.hrc"
    with headrace.Writer(path, [headrace.FieldSpec("particles", "float32", 8)]) as w:
        for t in range(64):
            w.write(w.add_frame(time=float(t)), "particles", np.full((1000, 8), t, np.float32))
    ds = headrace.open(path)
    with ds.stream(device=0, prefetch=2, pin_files="on", loop=2) as stream:
        for frame in stream:
            values = cupy.asnumpy(cupy.from_dlpack(frame["particles"]))
            assert (values == frame.index).all(), frame.index
            frame.release(stream=cupy.cuda.get_current_stream().ptr)


@pytest.mark.gpu
@pytest.mark.parametrize("codec", ["none", "lz4", "zstd", "gdeflate"])
def test_gpu_frames_are_zero_copy_and_match_the_cpu_reference(codec_files, codec):
    import cupy

    paths, frames = codec_files
    ds = headrace.open(paths[codec])
    with ds.stream(device=0, prefetch=3, backend="uring", loop=2, pin_files=codec == "none") as stream:
        for frame in stream:
            field = frame["particles"]
            values = cupy.from_dlpack(field)  # waits on the frame's fence on CuPy's stream
            assert values.data.ptr == field.__cuda_array_interface__["data"][0]  # no copy
            np.testing.assert_array_equal(cupy.asnumpy(values), frames[frame.index])
            frame.release(stream=cupy.cuda.get_current_stream().ptr)


@pytest.mark.gpu
@pytest.mark.parametrize("take", ["from_dlpack", "cuda_array_interface"])
def test_gpu_arrays_collected_the_natural_way_hold_their_own_frames(codec_files, take):
    import cupy

    paths, frames = codec_files
    ds = headrace.open(paths["lz4"])
    taken = {"from_dlpack": cupy.from_dlpack, "cuda_array_interface": cupy.asarray}[take]
    with ds.stream(device=0, prefetch=2, loop=2) as stream:
        collected = [taken(f["particles"]) for f in stream]
        assert stream.kept_frames == 8
    cupy.cuda.get_current_stream().synchronize()
    for index, values in enumerate(collected):
        np.testing.assert_array_equal(cupy.asnumpy(values), frames[index % 4])


@pytest.mark.gpu
def test_gpu_frames_reach_torch_and_numba(codec_files):
    paths, frames = codec_files
    ds = headrace.open(paths["lz4"])
    torch = pytest.importorskip("torch")
    with ds.stream(device=0, prefetch=2) as stream:
        frame = next(stream)
        tensor = torch.from_dlpack(frame["particles"])
        assert tensor.is_cuda and tuple(tensor.shape) == (30000, 8)
        np.testing.assert_array_equal(tensor.cpu().numpy(), frames[0])
        numba_cuda = pytest.importorskip("numba.cuda")
        frame.wait()
        device_array = numba_cuda.as_cuda_array(frame["particles"])
        np.testing.assert_array_equal(device_array.copy_to_host(), frames[0])


def test_stream_without_a_gpu_says_it_streams_into_host_memory(codec_files, capsys):
    if headrace._ext.gpu_count() > 0:
        pytest.skip("a GPU is here: the default device is GPU 0")
    paths, _ = codec_files
    assert main(["stream", str(paths["none"]), "--json"]) == 0
    captured = capsys.readouterr()
    assert "no GPU (" in captured.err and "host memory instead" in captured.err
    assert json.loads(captured.out)["device"] == "cpu"  # stdout stays JSON


def test_spare_slot_buffers_of_several_sizes_are_handed_out_by_size():
    """Closed streams leave host buffers of different sizes: the one handed out is taken out of the spares
    by identity (NumPy arrays compare element by element)."""
    from headrace.engine import Engine

    engine = Engine(None)
    large, small = np.empty(9600, np.uint8), np.empty(2048, np.uint8)
    engine.keep_slot_buffers([large, small])
    assert engine.slot_buffer(2000) is small
    assert engine.slot_buffer(9000) is large
    assert engine.slot_buffer(2000) is not small  # none left: a new one
