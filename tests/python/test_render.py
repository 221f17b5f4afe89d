"""headrace render and headrace.workloads.particles: sphere glyphs drawn by the CPU reference renderer."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import headrace
from headrace.imaging import parse_camera
from headrace.workloads.particles import (GPU_METHODS, METHODS, StreamingRenderer, render_frame, render_particles,
                                          render_streamed)
from headrace.cli.main import main
from headrace.generate import generate_particles


@pytest.fixture(scope="module")
def particles(tmp_path_factory):
    path = tmp_path_factory.mktemp("render") / "p.hrc"
    generate_particles(path, particles=20000, frames=3, seed=4, chunk_size_bytes=32 << 10)  # 1024 to a chunk
    return path


def test_a_frame_is_the_same_image_whatever_the_batching(particles):
    whole = render_frame(particles, 1, width=160, height=120, batch=1 << 20)
    assert whole.shape == (120, 160, 4) and whole.dtype == np.uint8
    np.testing.assert_array_equal(render_frame(particles, 1, width=160, height=120, batch=777, threads=3), whole)
    drawn = np.any(whole[..., :3] != 0, axis=2)
    assert 0.2 < drawn.mean() < 0.9  # the box fills part of the view, black around it
    assert not drawn[0, 0] and drawn[60, 80]
    white = render_frame(particles, 1, width=160, height=120, background=(255, 255, 255))
    assert tuple(white[0, 0]) == (255, 255, 255, 255)


@pytest.fixture(scope="module")
def zstd_particles(tmp_path_factory):
    path = tmp_path_factory.mktemp("render-zstd") / "z.hrc"
    generate_particles(path, particles=20000, frames=1, seed=4, codec="zstd", chunk_size_bytes=64 << 10)
    return path


CPU_METHODS = [m for m in METHODS if m not in GPU_METHODS and not m.startswith("compressed-")]


@pytest.mark.parametrize("method", CPU_METHODS)
def test_every_streaming_method_draws_the_same_frame(particles, method):
    expected = render_particles(headrace.open(particles).read(0, "particles"), width=120, height=90,
                                       **parse_camera("orbit:30,20", ((0, 0, 0), (1, 1, 1))))
    image, stats = render_streamed(particles, 0, method=method, width=120, height=90, batch=5000, segments=2)
    np.testing.assert_array_equal(image, expected)
    assert stats["method"] == method and stats["device"] == "cpu"
    assert stats["batches"] == 5 and stats["particles"] == 20000 and len(stats["batch_draw_seconds"]) == 5
    assert stats["seconds"] > 0 and stats["stored_bytes"] == 20000 * 32


def test_the_mapping_methods_map_what_seed_000_maps(particles):
    """"Map individually": one render segment a mapping; "map batches": as many as there are segments in flight."""
    from headrace.workloads.particles import StreamingRenderer

    segment = 4 * 1024 * 32  # a batch of at most 5000 particles: four chunks of 1024, whole pages
    for method, window in (("mmap-segment", None), ("mmap-batch", 3)):
        io = StreamingRenderer(particles, method=method, batch=5000, segments=3).engine.options.io
        assert io.task_size_bytes == segment and str(io.mmap_mode).endswith("segment" if window is None else "window")
        if window:
            assert io.mmap_window_segments == window


def test_compressed_frames_draw_the_same_and_methods_check_the_codec(particles, zstd_particles):
    plain = render_frame(particles, 0, width=100, height=80)
    image, stats = render_streamed(zstd_particles, 0, method="compressed-zstd", width=100, height=80, batch=4096)
    np.testing.assert_array_equal(image, plain)
    assert stats["stored_bytes"] < 20000 * 32  # random floats compress a little
    with pytest.raises(headrace.UsageError, match="holds zstd"):
        render_streamed(zstd_particles, 0, method="compressed-lz4")
    for gpu_only in GPU_METHODS:
        with pytest.raises(headrace.UsageError, match=f"method {gpu_only} .*needs a GPU"):
            render_streamed(particles, 0, method=gpu_only, device="cpu")
    with pytest.raises(headrace.UsageError, match="expected one of"):
        render_streamed(particles, 0, method="teleport")


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["vram", "pread", "uring-batched", "mmap-batch", "ram", "ram-pinned"])
def test_the_gpu_draws_the_cpu_references_image(particles, method):
    expected = render_frame(particles, 1, width=160, height=120, device="cpu")
    image, stats = render_streamed(particles, 1, method=method, device=0, width=160, height=120, batch=5000,
                                          segments=2)
    np.testing.assert_array_equal(image, expected)
    assert stats["device"] == 0 and stats["draw_seconds"] > 0


def test_a_lone_sphere_head_on_is_a_shaded_disc():
    sphere = np.array([[0, 0, 0, 1, 1, 0, 0, 1]], dtype=np.float32)  # red, radius 1, at the origin
    image = render_particles(sphere, width=101, height=101, eye=(0, 0, 5), target=(0, 0, 0), fov=60)
    assert image[50, 50, 0] == 255 and image[50, 50, 2] == 77  # full red, and the highlight's 0.3 in blue
    assert image[0, 0, 0] == 0
    red = image[..., 0].astype(int)
    assert red[50, 30] < red[50, 50] and red[50, 40] <= red[50, 50]  # darker towards the rim
    with pytest.raises(headrace.UsageError, match=r"\(N, 8\)"):
        render_particles(np.zeros((3, 4), dtype=np.float32))


def test_render_command_writes_images_and_an_animation(particles, tmp_path, capsys):
    out = tmp_path / "f.png"
    assert main(["render", str(particles), "--frame", "2", "--out", str(out), "--width", "96", "--height", "64",
                 "--camera", "lookat:0.5,0.5,3:0.5,0.5,0.5", "--device", "cpu", "--method", "direct", "--stats"]) == 0
    said = capsys.readouterr().out
    assert "segment waits" in said and said.index("setup: ") < said.index("frame 2: ")  # setup said apart, first
    with Image.open(out) as image:
        assert image.size == (96, 64) and image.mode == "RGBA"
    folder, video = tmp_path / "frames", tmp_path / "series.gif"
    assert main(["render", str(particles), "--frames", "0:3", "--out", str(folder), "--video", str(video),
                 "--width", "48", "--height", "32", "--camera", "orbit:10,15,3"]) == 0
    assert sorted(p.name for p in folder.iterdir()) == ["frame_00000.png", "frame_00001.png", "frame_00002.png"]
    with Image.open(video) as animation:  # the generator repeats its particles: Pillow merges equal frames
        assert sum(_durations(animation)) == 3 * 100
    assert not list(tmp_path.rglob("*.partial"))
    capsys.readouterr()


def _durations(animation):
    for index in range(animation.n_frames):
        animation.seek(index)
        yield animation.info["duration"]


@pytest.mark.parametrize("arguments, message", [
    (["--frame", "9"], "no frame 9"),
    (["--frames", "2:7"], "frames 0 to 2"),
    (["--frame", "0", "--camera", "spin:1"], "--camera"),
    (["--frame", "0", "--background", "300,0,0"], "R,G,B"),
    (["--frame", "0", "--out-format"], "unrecognized arguments"),
])
def test_render_command_refuses_bad_input(particles, tmp_path, capsys, arguments, message):
    command = ["render", str(particles), "--out", str(tmp_path / "x.png"), *arguments]
    assert main(command) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_a_series_loads_the_next_frame_ahead_and_each_frame_is_still_its_own(particles):
    # 5 batches in 3 segments: 3 loaded ahead; in 10 segments, the whole next frame.
    for segments, ahead in ((3, 3), (10, 5)):
        streamer = StreamingRenderer(particles, method="pread", device="cpu", width=96, height=72, batch=4096,
                                            segments=segments)
        own_bytes = streamer.render(0)["stored_bytes"]  # every frame holds as many particles in as many chunks
        order = [0, 1, 2, 1]
        for n, frame in enumerate(order):
            stats = streamer.render(frame, next_frame=order[n + 1] if n + 1 < len(order) else None)
            np.testing.assert_array_equal(streamer.image(), render_frame(particles, frame, width=96, height=72))
            assert stats["loaded_ahead"] == (0 if n == 0 else ahead)
            assert stats["stored_bytes"] == own_bytes  # its own bytes, read ahead or not
        assert streamer.render(0)["loaded_ahead"] == 0  # the last call asked for nothing ahead
    with pytest.raises(headrace.UsageError, match="no frame 3"):
        streamer.render(0, next_frame=3)
