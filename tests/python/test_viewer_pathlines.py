"""Pathlines in the viewer (issue 40): a flow series drawn as a lattice of glyphs coloured by speed
(LatticeScene), the paths drawn over each frame up to its time (PathOverlay) where the renderers' camera
puts them, and `headrace view SERIES --pathlines PATHS.npz` serving both."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import numpy as np
import pytest

aiohttp = pytest.importorskip("aiohttp", reason="the viewer's server needs aiohttp (scripts/setup.sh installs it)")

import headrace  # noqa: E402
from headrace import _ext  # noqa: E402
from headrace.generate import generate_flow  # noqa: E402
from headrace.viewer import OrbitCamera, ViewerServer  # noqa: E402
from headrace.viewer.client import ProtocolClient  # noqa: E402
from headrace.viewer.scenes import scene_of  # noqa: E402
from headrace.workloads.particles.frames import render_particles  # noqa: E402
from headrace.workloads.points import LatticeScene  # noqa: E402
from headrace.workloads.streamlines import (PathOverlay, convert_to_hilbert, trace_pathlines, uniform_seeds,  # noqa: E402
                                            write_pathlines)

WIDTH, HEIGHT = 160, 120


@pytest.fixture(scope="module")
def gyre(tmp_path_factory):
    """A double gyre of 6 frames 0.2 apart on 24 x 12 x 8 points, and 40 pathlines through it as an .npz."""
    folder = tmp_path_factory.mktemp("viewer-pathlines")
    flow = folder / "gyre.hrc"
    generate_flow(flow, dims=(24, 12, 8), frames=6, kind="double-gyre", dt=0.2)
    paths = folder / "paths.npz"
    result = trace_pathlines(flow, uniform_seeds(flow, 40), step_size=0.02)
    write_pathlines(paths, result)
    return flow, paths, result


def _lit(image: np.ndarray) -> np.ndarray:
    return image[..., :3].astype(int).sum(axis=2) > 0


def _black() -> np.ndarray:
    image = np.zeros((HEIGHT, WIDTH, 4), np.uint8)
    image[..., 3] = 255
    return image


def test_a_path_projects_where_the_renderer_draws_a_sphere():
    camera = OrbitCamera(target=(0.0, 0.0, 0.0), distance=4.0, azimuth=35.0, elevation=25.0)
    for point in ([0.0, 0.0, 0.0], [0.6, -0.3, 0.4], [-0.8, 0.5, -0.2]):
        sphere = np.array([[*point, 0.03, 1, 1, 1, 1]], np.float32)
        image = render_particles(sphere, width=WIDTH, height=HEIGHT, target=camera.target,
                                 orbit=(camera.distance, camera.azimuth, camera.elevation))
        ys, xs = np.nonzero(_lit(image))
        overlay = PathOverlay.from_arrays([point, point], [0, 2], [0.0, 1.0], [1.0, 1.0])
        pixel, ahead = overlay.projected(camera, WIDTH, HEIGHT)
        assert ahead.all()
        assert abs(pixel[0, 0] - (xs.mean() + 0.5)) < 0.75 and abs(pixel[0, 1] - (ys.mean() + 0.5)) < 0.75, point


def test_a_path_is_drawn_up_to_the_time_its_particle_a_dot_there():
    camera = OrbitCamera(target=(0.0, 0.0, 0.0), distance=3.0, azimuth=0.0, elevation=0.0)
    x = np.linspace(-0.8, 0.8, 11)
    points = np.stack([x, np.zeros(11), np.zeros(11)], axis=1)  # left to right across the image's middle
    times = np.linspace(0.0, 1.0, 11)
    forward = PathOverlay.from_arrays(points, [0, 11], times, np.linspace(0, 1, 11))
    pixel, _ = forward.projected(camera, WIDTH, HEIGHT)
    row = int(pixel[0, 1])

    def columns(image: np.ndarray) -> np.ndarray:
        return np.flatnonzero(_lit(image)[row])

    half = columns(forward.draw(_black(), camera, 0.45))  # between points 4 and 5: the segment cut there
    middle = pixel[0, 0] + 0.45 * (pixel[-1, 0] - pixel[0, 0])
    assert half.min() == int(pixel[0, 0]) and abs(half.max() - middle) <= 2
    whole = columns(forward.draw(_black(), camera, 1.0))
    assert whole.min() == int(pixel[0, 0]) and whole.max() >= int(pixel[-1, 0]) - 1
    assert not _lit(forward.draw(_black(), camera, -0.1)).any(), "not yet released"
    # The dot at the particle: three rows, where the line is one.
    assert _lit(forward.draw(_black(), camera, 0.45))[row - 1 : row + 2, int(middle)].all()
    # Backward in time the path runs from its seed at t = 1 down: at 0.55 the same half, from the right.
    backward = PathOverlay.from_arrays(points[::-1], [0, 11], times[::-1], np.linspace(0, 1, 11))
    assert not backward.forward
    back = columns(backward.draw(_black(), camera, 0.55))
    assert back.max() >= int(pixel[-1, 0]) - 1 and abs(back.min() - (pixel[0, 0] + 0.55 * (pixel[-1, 0] - pixel[0, 0]))) <= 2
    # What was under the lines is kept elsewhere: a copy is drawn on.
    grey = _black()
    grey[..., :3] = 40
    drawn = forward.draw(grey, camera, 1.0)
    assert (grey[..., :3] == 40).all() and (drawn[~_lit(drawn - 40)][..., :3] == 40).all()


def test_paths_load_from_the_npz_trace_writes_and_anything_else_is_refused(gyre, tmp_path):
    flow, paths, result = gyre
    overlay = PathOverlay.load(paths)
    assert overlay.count == len(result.ends) and overlay.forward
    np.testing.assert_array_equal(overlay.times, result.times)
    for name, content, expected in [("paths.vtp", b"", r"paths\.vtp: the viewer draws pathlines from the \.npz"),
                                    ("broken.npz", b"not a zip", r"broken\.npz: not a readable \.npz of pathlines")]:
        (tmp_path / name).write_bytes(content)
        with pytest.raises(headrace.errors.UsageError, match=expected):
            PathOverlay.load(tmp_path / name)
    np.savez(tmp_path / "lines.npz", points=np.zeros((2, 3), np.float32), offsets=np.array([0, 2]), IntegrationTime=np.zeros(2))
    with pytest.raises(headrace.errors.UsageError, match=r"lines\.npz: expected pathlines .* lacks Time, Speed"):
        PathOverlay.load(tmp_path / "lines.npz")


def _frame_images(ds, scene, frames, camera=None, stream_device="cpu"):
    images = []
    with ds.stream(fields=scene.fields, device=stream_device) as stream:
        stream.play(list(frames))
        for _ in frames:
            frame = next(stream)
            scene.prepare(frame, 0)
            images.append(scene.render(frame, camera or scene.home, 0))
            frame.release()
    return images


def test_a_flow_series_draws_as_a_lattice_coloured_by_each_frames_speed(gyre, tmp_path):
    flow, _, _ = gyre
    ds = headrace.open(flow)
    kind = scene_of(ds)
    assert kind.make is LatticeScene and kind.kind == "particles"
    assert kind.describe(ds) == {"fields": ["velocity"], "value_range": None, "colour_by": ["speed"]}
    scene = LatticeScene(ds, None, WIDTH, HEIGHT)
    first, later = _frame_images(ds, scene, [0, 3])
    assert _lit(first).mean() > 0.02 and (first != later).any(), "the gyre moves: the speeds differ"
    # Each glyph coloured by its grid point's speed in the frame: the lattice's scalars are those speeds.
    grid = next(iter(ds.stream(fields=["velocity"], device="cpu")))["velocity"].numpy()
    k, j, i = scene._lattice
    expected = np.sqrt((grid[k, j, i].astype(np.float64) ** 2).sum(axis=1))
    assert scene.speed_range[1] == pytest.approx(np.percentile(expected, 99), rel=1e-5)
    with pytest.raises(headrace.errors.UsageError, match="coloured by speed, not 'x'"):
        scene.set_style({"colour_by": "x"}, 0)
    assert scene.set_style({"colour_map": "magma", "radius_scale": 2.0}, 0) is False
    # The Hilbert layout of the same flow draws the same images (the stream delivers both in grid order).
    hilbert = tmp_path / "gyre-hilbert.hrc"
    convert_to_hilbert(flow, hilbert, say=lambda text: None)
    twin = headrace.open(hilbert)
    np.testing.assert_array_equal(_frame_images(twin, LatticeScene(twin, None, WIDTH, HEIGHT), [0, 3])[1], later)


def test_the_server_draws_the_paths_over_each_frame_up_to_its_time(gyre):
    import io

    from PIL import Image

    flow, paths, result = gyre
    shown: dict[int, np.ndarray] = {}

    async def scenario(url):
        async with aiohttp.ClientSession() as http:
            browser = await ProtocolClient.connect(http, url)
            assert browser.hello["files"][0]["kind"] == "particles"
            assert browser.hello["pathlines"] == {"file": "paths.npz", "paths": len(result.ends)}
            await browser.pump(until=lambda b: b.shown)
            await browser.send({"type": "seek", "frame": 5})
            await browser.pump(until=lambda b: any(s.header["frame"] == 5 for s in b.shown))
            last = next(s for s in browser.shown if s.header["frame"] == 5)
            shown[5] = np.asarray(Image.open(io.BytesIO(last.payload)).convert("RGB"), dtype=np.int16)
            await browser.close()

    viewer = ViewerServer([str(flow)], device="cpu", width=WIDTH, height=HEIGHT, fps=0, disk_rate=1e9, pathlines=paths)
    url = viewer.start()
    try:
        asyncio.run(asyncio.wait_for(scenario(url), 120))
    finally:
        viewer.stop()
    # The page's image (a JPEG) is the lattice with the paths drawn over it at frame 5's time, not the lattice alone.
    ds = headrace.open(flow)
    image = _frame_images(ds, LatticeScene(ds, None, WIDTH, HEIGHT), [5])[0]
    drawn = PathOverlay.load(paths).draw(image, OrbitCamera.framing(_box(ds)), float(ds.frames[5].time))
    assert (drawn != image).any(axis=2).mean() > 0.01
    off = {name: np.abs(shown[5] - picture[..., :3].astype(np.int16)).mean() for name, picture in (("with", drawn), ("without", image))}
    assert off["with"] < 0.6 * off["without"], off


def _box(ds):
    attributes = ds.attributes
    origin, spacing = np.asarray(attributes["grid_origin"]), np.asarray(attributes["grid_spacing"])
    return origin, origin + (np.asarray(attributes["grid_dims"]) - 1) * spacing


def test_the_command_refuses_paths_it_cannot_draw_before_serving(gyre, tmp_path):
    flow, _, _ = gyre
    (tmp_path / "paths.vtp").write_bytes(b"<VTKFile/>")
    done = subprocess.run([sys.executable, "-m", "headrace", "view", str(flow), "--pathlines", str(tmp_path / "paths.vtp"),
                           "--port", "0", "--device", "cpu", "--disk-rate", "1G"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "paths.vtp: the viewer draws pathlines from the .npz" in done.stderr


@pytest.mark.gpu
def test_the_gpu_lattice_draws_the_cpu_lattices_image(gyre):
    flow, _, _ = gyre
    ds = headrace.open(flow)
    images = []
    for device in (None, 0):
        scene = LatticeScene(ds, device, WIDTH, HEIGHT)
        cuda_stream = _ext.CudaStream(0) if device is not None else None  # held while it renders
        handle = cuda_stream.handle if cuda_stream else 0
        with ds.stream(fields=scene.fields, device="cpu") as stream:
            frame = next(stream)
            scene.prepare(frame, handle)
            images.append(scene.render(frame, scene.home.orbited(20, 10), handle))
    np.testing.assert_array_equal(images[1], images[0])
