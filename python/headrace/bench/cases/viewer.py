"""Measures headrace view as a browser sees it: frames per second delivered to one browser, hot and cold,
against the render-only rate of the same call, and the time from a slider jump to the new image.

    python3 -m headrace.bench.cases.viewer FILE... [--device 0] [--seconds 6] [--jumps 5] [--cache hot,drop-all] --out DIR

For each file and cache state, ``headrace view FILE`` in a process of its own (:class:`ViewProcess`: the
command's defaults, 1024 x 768 on a GPU, JPEG quality 85, playing as fast as it goes) and one browser
stand-in (:class:`headrace.viewer.client.ProtocolClient`: every image decoded before it is acknowledged,
as the page does):

- ``render-only``: the session's scene (the same renderer and camera) drawing one resident frame again
  and again, the image copied to the host as the session does: ``render`` alone and with the JPEG
  encoding (``render+encode``), the most a session can deliver with the data already in GPU memory;
- ``play``: hot, the file read once first, then ``--seconds`` of playback around the series; cold
  (``drop-all``: the whole page cache dropped, root; ``cold``: the file evicted), one lap from frame 0
  without loop, each frame read from the disk once (a seek to frame 0 right after the drop, so that
  nothing loaded before counts). Delivered: images the browser showed per second; streamed: frames the
  session rendered per second (a frame the browser had no time for is dropped, not waited for);
- ``--chromium``: hot, the page itself in headless Chromium beside the stand-in, its own count of images
  shown (where Chromium runs: the CPU machine; the GPU machine has none);
- ``jump``: paused, a seek to a frame half the series away (not loaded ahead), timed from the message
  to the new frame's image decoded in the browser, ``--jumps`` times; cold drops the cache first.

The yardsticks of the same call, measured first: the disk (``headrace probe`` of the first file's folder,
given to the servers as ``--disk-rate``) and the pinned host-to-device rate. Writes ``viewer.json`` and
``viewer.csv`` under ``--out``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np

import headrace
from headrace import _ext
from headrace.bench.harness import Measurement, Stopwatch, measure, uncache, warm_page_cache, write_csv
from headrace.codecs import disk_rate_of
from headrace.engine import release_engines
from headrace.viewer.client import ProtocolClient
from headrace.viewer.scenes import describe_file, make_scene
from headrace.viewer.session import encode_jpeg

__all__ = ["main"]


def render_only(path: str, device: int | None, width: int, height: int, repeats: int) -> dict[str, float]:
    """Frames per second of the session's scene on one resident frame: render alone, and render + JPEG."""
    rates = _render_rates(path, device, width, height, repeats)
    # This process's engine page-locked the file if it found it cached: such pages outlive a drop of the
    # page cache, so the engine goes before a cold run.
    release_engines()
    gc.collect()
    return rates


def _render_rates(path: str, device: int | None, width: int, height: int, repeats: int) -> dict[str, float]:
    ds = headrace.open(path)
    scene = make_scene(ds, device, width, height)
    cuda_stream = _ext.CudaStream(device) if device is not None else None  # held while the scene renders
    handle = cuda_stream.handle if cuda_stream is not None else 0
    with ds.stream(fields=scene.fields, device="cpu" if device is None else device) as stream:
        frame = next(stream)
        scene.prepare(frame, handle)
        scene.render(frame, scene.home, handle)  # warm: kernels loaded, buffers made

        def draw() -> int:
            scene.render(frame, scene.home, handle)
            return 1

        def draw_and_encode() -> int:
            encode_jpeg(scene.render(frame, scene.home, handle), 85)
            return 1

        alone = measure("render-only", draw, files=[], cache="hot", repeats=repeats)
        encoded = measure("render+encode", draw_and_encode, files=[], cache="hot", repeats=repeats)
        frame.release()
    return {"render_fps": 1 / statistics.median(alone.seconds), "render_encode_fps": 1 / statistics.median(encoded.seconds)}


async def _play(url: str, cache: str, seconds: float, frames: int, paths: list[str]) -> dict[str, Any]:
    """One playback as a browser sees it; hot: ``seconds`` around the series, cold: one lap from frame 0,
    no loop, the cache dropped just before."""
    async with aiohttp.ClientSession() as http:
        client = await ProtocolClient.connect(http, url)
        await client.pump(until=lambda c: bool(c.shown and c.states))
        hot = cache == "hot"
        await client.send({"type": "set", "fps": 0, "loop": hot})
        await client.pump(until=lambda c: c.states[-1]["fps"] == 0)
        first = len(client.shown)
        if hot:
            watch = Stopwatch()
            await client.send({"type": "play"})
        else:
            # What the session loaded ahead on connecting is read again: the cache dropped now, a seek
            # cancels the frames waiting in slots and reads from frame 0 on.
            await client.pump(0.5)
            first = len(client.shown)
            await asyncio.to_thread(uncache, paths, cache)
            watch = Stopwatch()
            await client.send({"type": "seek", "frame": 0})
            await client.send({"type": "play"})
        if hot:
            await client.pump(seconds)
        else:
            await client.pump(until=lambda c: not c.states[-1]["playing"] and c.shown[-1].frame == frames - 1
                              and c.states[-1]["frame"] == frames - 1, limit=600)
        elapsed = watch.seconds()
        await client.send({"type": "pause"})
        await client.pump(0.6)  # the panel's last numbers
        shown = client.shown[first:]
        stats = client.stats[-1] if client.stats else {}
        await client.close()
    return {"seconds": elapsed, "shown": len(shown), "frames_shown": sorted({s.frame for s in shown}),
            "panel": stats}


def _play_in_chromium(url: str, seconds: float) -> dict[str, Any]:
    """The page itself in headless Chromium (Debian's chromium and chromium-driver, through Selenium),
    playing as fast as it goes for ``seconds``: the images it showed, by its own count."""
    # Deferred: Selenium is optional (the CPU machine's tests install it) and only this run needs it.
    from selenium import webdriver  # type: ignore[import-not-found]
    from selenium.webdriver.chrome.options import Options  # type: ignore[import-not-found]
    from selenium.webdriver.chrome.service import Service  # type: ignore[import-not-found]

    options = Options()
    options.binary_location = shutil.which("chromium") or "chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "chromedriver"), options=options)
    try:
        driver.get(url)
        shown = "return (window.headraceViewer && window.headraceViewer.shown) || 0;"
        waiting = Stopwatch()
        while driver.execute_script(shown) < 1 and waiting.seconds() < 60:
            time.sleep(0.05)
        driver.execute_script("window.headraceViewer.send({type: 'set', fps: 0, loop: true});")
        time.sleep(0.3)
        first = driver.execute_script(shown)
        watch = Stopwatch()
        driver.execute_script("window.headraceViewer.send({type: 'play'});")
        time.sleep(seconds)
        count = driver.execute_script(shown) - first
        elapsed = watch.seconds()
        driver.execute_script("window.headraceViewer.send({type: 'pause'});")
        return {"seconds": elapsed, "shown": count, "delivered_fps": count / elapsed}
    finally:
        driver.quit()


async def _jumps(url: str, cache: str, frames: int, jumps: int, paths: list[str]) -> list[float]:
    """Seconds from a seek half the series away to its image decoded, per jump."""
    latencies = []
    async with aiohttp.ClientSession() as http:
        client = await ProtocolClient.connect(http, url)
        await client.pump(until=lambda c: bool(c.shown and c.states))
        current = 0
        for _ in range(jumps):
            target = (current + frames // 2 + 1) % frames
            if target == current:
                target = (current + 1) % frames
            await asyncio.to_thread(uncache, paths, cache)
            count = len(client.shown)
            watch = Stopwatch()
            await client.send({"type": "seek", "frame": target})
            def arrived(c: ProtocolClient, n: int = count, t: int = target) -> bool:
                return len(c.shown) > n and c.shown[-1].frame == t

            await client.pump(until=arrived, limit=120)
            latencies.append(watch.seconds_to(client.shown[-1].at))
            current = target
            await client.pump(0.3)  # what the seek loaded ahead settles
        await client.close()
    return latencies


class ViewProcess:
    """``headrace view FILE`` as a user starts it, in a process of its own (the browser stand-in's decoding
    and the server's work do not share an interpreter): the command's defaults, playback as fast as it
    goes (what the page's fps "max" asks for), the disk's rate given so that no probe runs beside the
    measurement."""

    def __init__(self, path: str, device: int | None, disk_rate: float) -> None:
        command = [sys.executable, "-m", "headrace", "view", path, "--port", "0", "--fps", "0", "--disk-rate",
                   str(int(disk_rate)), "--device", "cpu" if device is None else str(device)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if " at http://" not in line:
            self.process.kill()
            raise RuntimeError(f"headrace view did not start: {line}{self.process.stdout.read()}")
        self.url = line.split(" at ", 1)[1].split()[0]
        self.announced = line + self.process.stdout.readline()

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        self.process.wait(60)


def run_file(path: str, device: int | None, caches: list[str], seconds: float, jumps: int, repeats: int,
             disk_rate: float, chromium: bool = False) -> dict[str, Any]:
    ds = headrace.open(path)
    frames = len(ds.frames)
    described = describe_file(ds)
    kind = described["kind"]
    width, height = (1024, 768) if device is not None else (512, 384)  # headrace view's defaults
    fields = described["fields"]
    raw_frame = sum(ds.element_count(0, f) * ds.field(f).components * np.dtype(ds.field(f).dtype).itemsize for f in fields)
    rates = render_only(path, device, width, height, repeats)
    result: dict[str, Any] = {"file": path, "kind": kind, "frames": frames, "frame_bytes": raw_frame, "width": width,
                              "height": height, **rates, "runs": []}
    for cache in caches:
        # A process of its own each time: a cold run starts from an engine that holds nothing (an engine
        # page-locks a file it finds cached, and such pages outlive a drop of the page cache).
        how = warm_page_cache([path]) if cache == "hot" else uncache([path], cache)
        server = ViewProcess(path, device, disk_rate)
        try:
            played = asyncio.run(_play(server.url, cache, seconds, frames, [path]))
            latencies = asyncio.run(_jumps(server.url, cache, frames, jumps, [path]))
            if chromium and cache == "hot":
                result["chromium"] = _play_in_chromium(server.url, seconds)
        finally:
            server.stop()
        result["announced"] = server.announced
        delivered = played["shown"] / played["seconds"]
        panel = played["panel"]
        result["runs"].append({
            "cache": cache, "cache_method": how, **played, "delivered_fps": delivered,
            "delivered_gbps": played["shown"] * raw_frame / played["seconds"] / 1e9,
            "x_render_only": delivered / rates["render_fps"], "x_render_encode": delivered / rates["render_encode_fps"],
            "jump_s": latencies, "jump_median_s": statistics.median(latencies), "panel_gbps": panel.get("gbps"),
            "panel_h2d_gbps": panel.get("h2d_gbps"), "bytes_from_disk": panel.get("bytes_from_disk"),
            "bytes_from_cache": panel.get("bytes_from_cache")})
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--device", default="0", help="a GPU number or cpu (default 0)")
    parser.add_argument("--cache", default="hot,drop-all", help="cache states, comma-separated: hot, cold, drop-all")
    parser.add_argument("--seconds", type=float, default=6.0, help="hot playback per run (default 6)")
    parser.add_argument("--jumps", type=int, default=5, help="slider jumps timed per cache state (default 5)")
    parser.add_argument("--repeats", type=int, default=20, help="renders timed for the render-only rate (default 20)")
    parser.add_argument("--disk-rate", type=float, default=None,
                        help="bytes/s (default: a short probe of the first file's folder, before the runs)")
    parser.add_argument("--chromium", action="store_true",
                        help="hot: also the page itself in headless Chromium, beside the stand-in (where Chromium is)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    device = None if args.device == "cpu" else int(args.device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    # The call's yardsticks, measured before the runs (nothing else reads then).
    folder = os.path.dirname(os.path.abspath(args.files[0]))
    disk_rate, disk_how = (args.disk_rate, "given") if args.disk_rate else disk_rate_of(folder)
    h2d_rate = _ext.pinned_copy_rate(device) if device is not None else None
    print(f"ceilings: disk {disk_rate / 1e9:.2f} GB/s ({disk_how}); pinned H2D "
          f"{'n/a' if h2d_rate is None else f'{h2d_rate / 1e9:.1f} GB/s'}", flush=True)
    results = []
    for path in args.files:
        result = run_file(os.fspath(path), device, args.cache.split(","), args.seconds, args.jumps, args.repeats, disk_rate,
                          args.chromium)
        result.update(disk_gbps=disk_rate / 1e9, disk_how=disk_how, h2d_gbps=None if h2d_rate is None else h2d_rate / 1e9)
        results.append(result)
        print(result["announced"].rstrip(), flush=True)
        if "chromium" in result:
            page = result["chromium"]
            print(f"{Path(path).name} hot in headless Chromium: {page['delivered_fps']:.1f} frames/s shown by the page "
                  f"({page['shown']} in {page['seconds']:.2f} s)", flush=True)
        for run in result["runs"]:
            print(f"{Path(path).name} {result['kind']} {run['cache']}: {run['delivered_fps']:.1f} frames/s delivered "
                  f"({run['shown']} in {run['seconds']:.2f} s, {run['delivered_gbps']:.2f} GB/s; {run['bytes_from_disk']} B "
                  f"from disk, {run['bytes_from_cache']} B from cache in the panel's last window), render-only "
                  f"{result['render_fps']:.1f}, render+encode {result['render_encode_fps']:.1f} -> x{run['x_render_only']:.2f} "
                  f"/ x{run['x_render_encode']:.2f}; jump {1e3 * run['jump_median_s']:.0f} ms (median of "
                  f"{len(run['jump_s'])}); panel {run['panel']}", flush=True)
    (out / "viewer.json").write_text(json.dumps(results, indent=1))
    rows = [Measurement(f"{Path(r['file']).name}/{run['cache']}", run["shown"] * r["frame_bytes"], [run["seconds"]],
                        "hot" if run["cache"] == "hot" else "cold", run["cache_method"],
                        {"kind": r["kind"], "delivered_fps": round(run["delivered_fps"], 3),
                         "render_fps": round(r["render_fps"], 3), "render_encode_fps": round(r["render_encode_fps"], 3),
                         "x_render_only": round(run["x_render_only"], 3), "jump_median_ms": round(1e3 * run["jump_median_s"], 1),
                         "disk_gbps": r["disk_gbps"], "h2d_gbps": r["h2d_gbps"]}) for r in results for run in r["runs"]]
    write_csv(os.fspath(out / "viewer.csv"), rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
