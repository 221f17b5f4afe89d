"""headrace view without a browser: the camera's mouse math, the scenes' images against the renderers'
references (CPU; the GPU's against the CPU's where there is one), and the server over real sockets:
what it serves and refuses, playback, two browsers at once, a slow browser and one that vanishes."""

from __future__ import annotations

import asyncio
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

aiohttp = pytest.importorskip("aiohttp", reason="the viewer's server needs aiohttp (scripts/setup.sh installs it)")

import headrace  # noqa: E402
from headrace import FieldSpec, _ext  # noqa: E402
from headrace.generate import generate_volume  # noqa: E402
from headrace.imaging import colour_table  # noqa: E402
from headrace.viewer import OrbitCamera, ViewerServer  # noqa: E402
from headrace.viewer.client import ProtocolClient  # noqa: E402
from headrace.viewer.server import IN_FLIGHT  # noqa: E402
from headrace.viewer.session import encode_jpeg  # noqa: E402
from headrace.workloads.particles import ParticleScene, render_frame, render_particles  # noqa: E402
from headrace.workloads.volume import VolumeScene  # noqa: E402

FRAMES = 8


def _particles(count: int, frame: int) -> np.ndarray:
    rng = np.random.default_rng(50 + frame)
    data = rng.random((count, 8), dtype=np.float32)
    data[:, 3] = 0.01 + 0.02 * data[:, 3]  # radii small against the unit box
    data[:, 7] = 1.0
    return data


@pytest.fixture(scope="module")
def particle_path(tmp_path_factory):
    """FRAMES frames of 3000 particles with an 'intensity' field, one float32 a particle."""
    path = tmp_path_factory.mktemp("viewer") / "p.hrc"
    with headrace.Writer(path, [FieldSpec("particles", "float32", 8), FieldSpec("intensity", "float32", 1)],
                         chunk_size_bytes=1 << 14) as w:
        for t in range(FRAMES):
            data = _particles(3000, t)
            frame = w.add_frame(time=0.25 * t, bbox=((0, 0, 0), (1, 1, 1)))
            w.write(frame, "particles", data)
            w.write(frame, "intensity", (data[:, 0] * data[:, 1]).reshape(-1, 1))
    return path


@pytest.fixture(scope="module")
def volume_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("viewer-volume") / "v.hrc"
    generate_volume(path, dims=(24, 20, 16), frames=4, seed=3)
    return path


# ---- the camera ----

def _pixel_of(camera: OrbitCamera, point, width: int, height: int) -> tuple[float, float]:
    """Where the renderers' pinhole camera puts a point (camera.hpp's project)."""
    forward, right, up = camera.axes()
    half = math.tan(math.radians(camera.fov) / 2)
    d = np.asarray(point) - camera.eye()
    depth = d @ forward
    sx, sy = (d @ right) / (half * width / height * depth), (d @ up) / (half * depth)
    return (sx + 1) / 2 * width, (1 - sy) / 2 * height


def test_a_pan_moves_the_point_under_the_cursor_with_it():
    camera = OrbitCamera.framing(((0, 0, 0), (2, 1, 1)), azimuth=40, elevation=25)
    moved = camera.panned(30, -12, 400)
    x, y = _pixel_of(moved, camera.target, 600, 400)
    assert x == pytest.approx(300 + 30, abs=1e-6) and y == pytest.approx(200 - 12, abs=1e-6)
    assert moved.distance == camera.distance and moved.azimuth == camera.azimuth


def test_orbit_turns_and_clamps_the_elevation_and_zoom_scales_the_distance():
    camera = OrbitCamera((0.0, 0.0, 0.0), 2.0, azimuth=10, elevation=20)
    turned = camera.orbited(40, 8)
    assert turned.azimuth == pytest.approx(0.0) and turned.elevation == pytest.approx(22.0)
    assert camera.orbited(0, 10_000).elevation == 89.0 and camera.orbited(0, -10_000).elevation == -89.0
    assert camera.zoomed(1.5).distance == pytest.approx(3.0)
    with pytest.raises(ValueError, match="positive and finite"):
        camera.zoomed(0.0)


def test_the_home_camera_is_headrace_renders_default(particle_path):
    ds = headrace.open(particle_path)
    scene = ParticleScene(ds, None, 96, 72)
    with ds.stream(device="cpu") as stream:
        image = scene.render(next(stream), scene.home, 0)
    np.testing.assert_array_equal(image, render_frame(ds, 0, width=96, height=72, device="cpu"))


# ---- the scenes against the renderers' references ----

def _styled_reference(particles: np.ndarray, values: np.ndarray, lo: float, hi: float, scale: float) -> np.ndarray:
    """The records as GlyphStyle draws them (sphere_glyphs_shared.hpp's styled), in NumPy float32."""
    table = colour_table("viridis")
    out = particles.copy()
    out[:, 3] *= np.float32(scale)
    u = (values.astype(np.float32) - np.float32(lo)) / (np.float32(hi) - np.float32(lo))
    u = np.where(u >= 0, np.minimum(u, np.float32(1)), np.float32(0)).astype(np.float32)
    entry = np.minimum(u * np.float32(256), np.float32(255)).astype(np.int32)
    out[:, 4:7] = table[entry, :3]
    return out


@pytest.mark.parametrize("source", ["x", "radius", "intensity"])
def test_colour_by_and_radius_scale_draw_what_the_reference_draws_of_restyled_records(particle_path, source):
    ds = headrace.open(particle_path)
    scene = ParticleScene(ds, None, 120, 90)
    assert scene.set_style({"colour_by": source, "radius_scale": 1.5}, 0) is (source == "intensity")
    assert scene.fields == (["particles", "intensity"] if source == "intensity" else ["particles"])
    camera = scene.home.orbited(25, 5)
    with ds.stream(fields=scene.fields, device="cpu") as stream:
        frame = next(stream)
        image = scene.render(frame, camera, 0)
        records = frame["particles"].numpy().copy()
        values = frame["intensity"].numpy()[:, 0] if source == "intensity" else records[:, {"x": 0, "radius": 3}[source]]
    lo, hi = scene._range_of(source)
    assert lo <= values.min() and values.max() <= hi
    expected = render_particles(_styled_reference(records, values, lo, hi, 1.5), width=120, height=90,
                                       target=camera.target, orbit=(camera.distance, camera.azimuth, camera.elevation))
    np.testing.assert_array_equal(image, expected)
    assert len({tuple(p) for p in image.reshape(-1, 4)[:, :3].tolist()}) > 50  # coloured, not flat


def test_a_particle_scene_refuses_what_it_cannot_colour_by(particle_path):
    scene = ParticleScene(headrace.open(particle_path), None, 32, 24)
    with pytest.raises(headrace.errors.UsageError, match="cannot colour by 'speed'.*x, y, z, radius, intensity"):
        scene.set_style({"colour_by": "speed"}, 0)
    with pytest.raises(headrace.errors.UsageError, match="radius scale"):
        scene.set_style({"radius_scale": -1}, 0)
    with pytest.raises(headrace.errors.UsageError, match="colour map 'rainbowish'"):
        scene.set_style({"colour_by": "x", "colour_map": "rainbowish"}, 0)


def test_a_volume_scene_renders_the_resident_frame_as_the_one_shot_image_does(volume_path):
    ds = headrace.open(volume_path)
    scene = VolumeScene(ds, None, 80, 60)
    camera = scene.home.orbited(-30, 10).zoomed(0.8)
    with ds.stream(fields=scene.fields, device="cpu") as stream:
        next(stream)
        frame = next(stream)
        scene.prepare(frame, 0)
        scalars = frame[scene.fields[0]].numpy().reshape(-1).copy()
        spec = camera.spec(80, 60)
        first = scene.render(frame, camera, 0)
        np.testing.assert_array_equal(first, scene._native.image(scalars, spec))
        assert first[..., :3].max() > 30
        # A new look classifies the resident frame again: the same as a fresh image under that look.
        scene.set_style({"opacity": [[0.0, 0.0], [0.5, 0.6], [1.0, 0.1]], "colour_map": "magma"}, 0)
        restyled = scene.render(frame, camera, 0)
        np.testing.assert_array_equal(restyled, scene._native.image(scalars, spec))
        assert (restyled != first).any()
        scene.set_style({"mode": "iso", "iso": float(np.percentile(scalars, 60))}, 0)
        np.testing.assert_array_equal(scene.render(frame, camera, 0), scene._native.image(scalars, spec))


@pytest.mark.parametrize("points", [[[0.2, 0.1]], [[0.5, 0.1], [0.2, 0.3]], [[0, 0], [1, 1.5]], "ramp"])
def test_a_volume_scene_refuses_bad_opacity_points_and_keeps_its_look(volume_path, points):
    scene = VolumeScene(headrace.open(volume_path), None, 32, 24)
    before = dict(scene.style)
    with pytest.raises(headrace.errors.UsageError, match="opacity"):
        scene.set_style({"opacity": points}, 0)
    assert scene.style == before


def test_an_amr_file_and_a_compressed_particle_file_draw_as_their_plain_twins(tmp_path, particle_path):
    from headrace.generate import generate_amr

    amr = generate_amr(tmp_path / "a.hrc", cells=60_000, levels=3, frames=2, seed=2)
    ds = headrace.open(amr)
    scene = VolumeScene(ds, None, 64, 48)
    with ds.stream(fields=scene.fields, device="cpu") as stream:
        frame = next(stream)
        scene.prepare(frame, 0)
        image = scene.render(frame, scene.home, 0)
        expected = scene._native.image(frame[scene.fields[0]].numpy().reshape(-1).copy(), scene.home.spec(64, 48))
    np.testing.assert_array_equal(image, expected)
    assert image[..., :3].max() > 30
    # The particles through a codec chain: the stream decodes them, the image is the plain file's.
    plain = headrace.open(particle_path)
    packed = tmp_path / "packed.hrc"
    with headrace.Writer(packed, [FieldSpec("particles", "float32", 8)], codec="shuffle|zstd") as w:
        for t in range(2):
            w.write(w.add_frame(time=0.25 * t, bbox=((0, 0, 0), (1, 1, 1))), "particles", plain.read(t, "particles"))
    images = []
    for source in (plain, headrace.open(packed)):
        scene = ParticleScene(source, None, 64, 48)
        with source.stream(fields=scene.fields, device="cpu") as stream:
            next(stream)
            images.append(scene.render(next(stream), scene.home, 0))
    np.testing.assert_array_equal(images[0], images[1])


def test_a_file_the_viewer_cannot_draw_is_named(tmp_path):
    path = tmp_path / "flow.hrc"
    with headrace.Writer(path, [FieldSpec("velocity", "float32", 3)]) as w:
        w.write(w.add_frame(time=0), "velocity", np.zeros((10, 3), np.float32))
    with pytest.raises(headrace.errors.UsageError, match=r"flow\.hrc: neither a volume .* velocity \(float32 x3\)"):
        ViewerServer([str(path)], device="cpu", disk_rate=1e9)


def test_a_device_that_is_not_there_is_refused_with_the_cpu_named():
    with pytest.raises(headrace.errors.UsageError, match="--device cpu"):
        from headrace.viewer.server import _pick_device

        _pick_device(_ext.gpu_count() + 3)


@pytest.mark.gpu
@pytest.mark.parametrize("source", ["stored", "z", "intensity"])
def test_the_gpu_particle_scene_draws_the_cpu_scenes_image(particle_path, source):
    ds = headrace.open(particle_path)
    images = []
    for device in (None, 0):
        scene = ParticleScene(ds, device, 128, 96)
        scene.set_style({"colour_by": source, "radius_scale": 2.0}, 0)
        cuda_stream = _ext.CudaStream(0) if device is not None else None  # held while it renders
        with ds.stream(fields=scene.fields, device="cpu" if device is None else 0) as stream:
            images.append(scene.render(next(stream), scene.home.orbited(15, 5), cuda_stream.handle if cuda_stream else 0))
    np.testing.assert_array_equal(images[1], images[0])


@pytest.mark.gpu
def test_the_gpu_volume_scene_draws_the_cpu_scenes_image(volume_path):
    ds = headrace.open(volume_path)
    images = []
    for device in (None, 0):
        scene = VolumeScene(ds, device, 96, 72)
        cuda_stream = _ext.CudaStream(0) if device is not None else None  # held while it renders
        handle = cuda_stream.handle if cuda_stream else 0
        with ds.stream(fields=scene.fields, device="cpu" if device is None else 0) as stream:
            frame = next(stream)
            scene.prepare(frame, handle)
            scene.set_style({"opacity": [[0.0, 0.0], [1.0, 0.5]]}, handle)
            images.append(scene.render(frame, scene.home.orbited(10, -5), handle))
    off = np.abs(images[0].astype(int) - images[1].astype(int)).max(axis=2)
    assert (off > 2).mean() <= 0.002 and images[0][..., :3].max() > 30


# ---- the server ----

@pytest.fixture
def server(particle_path, volume_path):
    viewer = ViewerServer([str(particle_path), str(volume_path)], device="cpu", width=96, height=72, fps=0,
                          disk_rate=2e9)
    url = viewer.start()
    yield viewer, url
    viewer.stop()


async def _connect(http, url, decode: bool = False):
    client = await ProtocolClient.connect(http, url, decode=decode)
    return client, client.hello


def _run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 120))


def test_the_server_serves_the_page_and_refuses_every_other_path(server, particle_path):
    _, url = server
    for path in ("", "static/viewer.js", "static/viewer.css"):
        with urllib.request.urlopen(url + path) as reply:
            assert reply.status == 200 and len(reply.read()) > 100
    outside = [str(particle_path).lstrip("/"), "p.hrc", "static/", "static/../p.hrc", "..%2f..%2fetc%2fpasswd",
               "static/%2e%2e/%2e%2e/etc/passwd", "files/0", "static/index.html/x"]
    for path in outside:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url + path)
        assert refused.value.code in (403, 404), path


def test_a_page_of_another_site_may_not_open_the_socket(server):
    async def scenario():
        _, url = server
        host = url.split("//", 1)[1].rstrip("/")
        async with aiohttp.ClientSession() as http:
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await http.ws_connect(url + "ws", headers={"Origin": "http://evil.example"})
            assert refused.value.status == 403
            own = await http.ws_connect(url + "ws", headers={"Origin": f"http://{host}"})  # the page's own origin
            assert (await own.receive_json(timeout=10))["type"] == "hello"
            await own.close()

    _run(scenario())


def _in_order_within(shown: list[int], rendered: list[int]) -> bool:
    """Whether ``shown`` is ``rendered`` with some left out, nothing reordered."""
    remaining = iter(rendered)
    return all(any(frame == r for r in remaining) for frame in shown)


def _holds_run(frames: list[int], run: list[int]) -> bool:
    return any(frames[k:k + len(run)] == run for k in range(len(frames) - len(run) + 1))


def test_hello_play_seek_and_stride(server):
    viewer, url = server

    def rendered() -> list[int]:
        return [r.frame for session in list(viewer.sessions.values()) for r in list(session.records)]

    async def scenario():
        async with aiohttp.ClientSession() as http:
            browser, hello = await _connect(http, url)
            assert [f["kind"] for f in hello["files"]] == ["particles", "volume"]
            assert hello["files"][0]["frames"] == FRAMES and hello["files"][0]["times"][2] == 0.5
            assert "intensity" in hello["files"][0]["colour_by"] and hello["files"][1]["value_range"][0] < hello["files"][1]["value_range"][1]
            assert hello["renderer"] == {"device": "CPU reference", "gpu": False, "width": 96, "height": 72,
                                         "note": "Asked for with --device cpu."}
            await browser.pump(until=lambda b: b.shown)
            assert browser.shown[0].frame == 0 and browser.shown[0].payload[:2] == b"\xff\xd8"  # a JPEG
            await browser.send({"type": "play"})
            await browser.pump(until=lambda b: len(b.shown) >= 12)
            # Every frame rendered in order, around again (loop is on); the browser sees them in that order but
            # may miss one replaced before it was sent (the latest image wins: a busy machine drops some).
            assert rendered()[:10] == [0, 1, 2, 3, 4, 5, 6, 7, 0, 1]
            assert _in_order_within([s.frame for s in browser.shown], rendered())
            await browser.send({"type": "set", "stride": 3})
            await browser.send({"type": "seek", "frame": 2})
            before = len(rendered())
            await browser.pump(until=lambda b: _holds_run(rendered()[before:], [2, 5, 0, 3]))
            await browser.send({"type": "pause"})
            await browser.send({"type": "set", "stride": 1, "loop": False})
            await browser.send({"type": "seek", "frame": 6})
            await browser.pump(until=lambda b: b.states and b.states[-1]["frame"] == 6 and not b.states[-1]["playing"])
            await browser.send({"type": "play"})
            # Without loop, playback stops on the last frame.
            await browser.pump(until=lambda b: b.states[-1]["frame"] == 7 and not b.states[-1]["playing"])
            await browser.pump(until=lambda b: b.stats and b.stats[-1]["gbps"] > 0)
            stats = browser.stats[-1]
            assert stats["disk_gbps"] == 2.0 and stats["h2d_gbps"] is None and stats["bytes_from_cache"] + stats["bytes_from_disk"] > 0
            assert stats["frame_ms"]["render"] > 0 and "prefetch=3" in stats["path"]
            await browser.close()

    _run(scenario())


def test_step_and_the_volume_and_look_messages(server):
    async def scenario():
        _, url = server
        async with aiohttp.ClientSession() as http:
            browser, _ = await _connect(http, url)
            await browser.pump(until=lambda b: b.shown)
            await browser.send({"type": "step", "by": -1})
            await browser.pump(until=lambda b: b.shown[-1].frame == FRAMES - 1)  # around, loop on
            await browser.send({"type": "open", "file": 1})
            await browser.pump(until=lambda b: b.states and b.states[-1]["file"] == 1 and b.shown[-1].frame == 0)
            before = browser.shown[-1].payload
            await browser.send({"type": "style", "colour_map": "magma", "opacity": [[0, 0], [1, 0.9]]})
            await browser.pump(until=lambda b: b.shown[-1].payload != before and b.states[-1]["style"]["colour_map"] == "magma")
            for bad in ({"type": "style", "mode": "mip"}, {"type": "open", "file": 7}, {"type": "seek", "frame": 99},
                        {"type": "camera", "action": "spin"}, {"type": "warp"}, {"type": "set", "stride": 0}):
                count = len(browser.errors)
                await browser.send(bad)
                await browser.pump(until=lambda b, count=count: len(b.errors) > count)
            messages = " | ".join(e["message"] for e in browser.errors)
            for expected in ("mode 'mip'", "serves files 0 to 1", "frames 0 to 3", "camera action 'spin'",
                             "unknown message type 'warp'", "stride 0"):
                assert expected in messages
            await browser.socket.send_str("not json")
            await browser.pump(until=lambda b: "not a JSON object" in b.errors[-1]["message"])
            # The session goes on after errors.
            await browser.send({"type": "seek", "frame": 3})
            await browser.pump(until=lambda b: b.shown[-1].frame == 3)
            await browser.close()

    _run(scenario())


def test_two_browsers_at_once_each_with_its_own_camera_and_playback(server):
    async def scenario():
        viewer, url = server
        async with aiohttp.ClientSession() as http:
            (a, _), (b, _) = await _connect(http, url), await _connect(http, url)
            await a.pump(until=lambda x: x.shown)
            await b.pump(until=lambda x: x.shown)
            assert len(viewer.sessions) == 2
            assert a.shown[0].payload == b.shown[0].payload  # the same frame from the same camera
            await a.send({"type": "camera", "action": "orbit", "dx": 80, "dy": 20})
            await a.pump(until=lambda x: len(x.shown) >= 2)
            assert a.shown[-1].payload != a.shown[0].payload
            await b.send({"type": "seek", "frame": 0})  # b draws frame 0 again: its camera did not move
            await b.pump(until=lambda x: len(x.shown) >= 2)
            assert b.shown[-1].payload == b.shown[0].payload
            await a.send({"type": "play"})
            await a.pump(until=lambda x: x.shown[-1].frame >= 4)
            await b.pump(0.3)
            assert b.states[-1]["playing"] is False and b.shown[-1].frame == 0
            await a.close()
            await b.close()

    _run(scenario())


def test_a_slow_browser_misses_frames_and_the_stream_goes_on(server):
    async def scenario():
        viewer, url = server
        async with aiohttp.ClientSession() as http:
            browser, _ = await _connect(http, url)
            await browser.pump(until=lambda x: x.shown, ack=False)
            await browser.send({"type": "play"})
            await browser.pump(1.5, ack=False)
            session = next(iter(viewer.sessions.values()))
            rendered = [r.frame for r in session.records]
            # IN_FLIGHT images sent and not acknowledged: nothing more was sent, while the stream went on.
            assert len(browser.shown) == IN_FLIGHT and len(rendered) > 2 * FRAMES and session.dropped > 0
            assert set(rendered) == set(range(FRAMES))
            await browser.send({"type": "ack", "seq": browser.shown[0].header["seq"]})
            await browser.pump(until=lambda x: len(x.shown) > IN_FLIGHT, ack=False)
            assert browser.shown[-1].header["seq"] > browser.shown[-2].header["seq"] + 1  # the latest, not the next
            await browser.close()

    _run(scenario())


def test_a_browser_that_vanishes_mid_stream_frees_its_session(server):
    viewer, url = server
    client = textwrap.dedent(f"""
        import asyncio, aiohttp
        async def main():
            async with aiohttp.ClientSession() as http:
                socket = await http.ws_connect({url + 'ws'!r})
                await socket.send_json({{"type": "play"}})
                while True:
                    message = await socket.receive()
                    if message.type == aiohttp.WSMsgType.BINARY:
                        print("image", flush=True)
        asyncio.run(main())
    """)
    process = subprocess.Popen([sys.executable, "-c", client], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "image"
        assert process.stdout.readline().strip() == "image"
        deadline = time.time() + 10
        while not viewer.sessions and time.time() < deadline:
            time.sleep(0.05)
        session = next(iter(viewer.sessions.values()))
        assert session.alive and session._stream is not None
    finally:
        os.kill(process.pid, signal.SIGKILL)  # gone without a close frame
        process.wait()
    deadline = time.time() + 30
    while (viewer.sessions or session.alive) and time.time() < deadline:
        time.sleep(0.05)
    assert not viewer.sessions and not session.alive
    assert session._stream is None and session._scene is None  # stream closed, renderer dropped


def test_stop_ends_every_session(particle_path):
    viewer = ViewerServer([str(particle_path)], device="cpu", width=64, height=48, disk_rate=1e9)
    url = viewer.start()

    async def connect():
        async with aiohttp.ClientSession() as http:
            browser, _ = await _connect(http, url)
            await browser.pump(until=lambda x: x.shown)
            sessions = list(viewer.sessions.values())
            await asyncio.to_thread(viewer.stop)
            return sessions

    sessions = _run(connect())
    assert sessions and not any(s.alive for s in sessions)


def test_jpeg_encoding_keeps_the_picture():
    from PIL import Image
    import io

    image = np.zeros((40, 60, 4), np.uint8)
    image[:, :30, 0] = 255
    image[..., 3] = 255
    decoded = np.asarray(Image.open(io.BytesIO(encode_jpeg(image, 90))))
    assert decoded.shape == (40, 60, 3) and decoded[:, :20, 0].min() > 240 and decoded[:, 40:, 0].max() < 15


@pytest.mark.gpu
def test_the_server_renders_on_the_gpu_what_it_renders_on_the_cpu(particle_path):
    async def first_images(device):
        viewer = ViewerServer([str(particle_path)], device=device, width=96, height=72, fps=0, disk_rate=2e9)
        url = viewer.start()
        try:
            async with aiohttp.ClientSession() as http:
                browser, hello = await _connect(http, url)
                await browser.send({"type": "play"})
                await browser.pump(until=lambda b: len(b.shown) >= FRAMES + 1)
                await browser.pump(until=lambda b: b.stats and (device == "cpu" or b.stats[-1]["h2d_gbps"]))
                await browser.close()
                return hello, {s.frame: s.payload for s in browser.shown}, browser.stats[-1]
        finally:
            await asyncio.to_thread(viewer.stop)

    hello, on_gpu, stats = _run(first_images(0))
    assert hello["renderer"]["gpu"] is True and "GPU 0" in hello["renderer"]["device"] and hello["renderer"]["note"] == ""
    assert stats["h2d_gbps"] > 1 and stats["gbps"] > 0
    _, on_cpu, _ = _run(first_images("cpu"))
    assert on_gpu == on_cpu  # the same pixels, so the same JPEG bytes, frame by frame
