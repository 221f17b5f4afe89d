"""headrace view as a browser sees it (issue 20): frames per second delivered to one browser, hot and cold,
against the render-only rate of the same call, and the time from a slider jump to the new image.

    python3 -m headrace.bench.cases.viewer FILE... [--device 0] [--seconds 6] [--jumps 5] [--cache hot,drop-all] --out DIR

For each file, one server (``headrace.viewer.ViewerServer`` with the command's defaults: 1024 x 768 on a
GPU, JPEG quality 85) and one browser stand-in (:class:`headrace.viewer.client.ProtocolClient`: every
image decoded before it is acknowledged, as the page does), playing as fast as the server goes (fps 0):

- ``render-only``: the session's scene (the same renderer and camera) drawing one resident frame again
  and again, the image copied to the host as the session does: ``render`` alone and with the JPEG
  encoding (``render+encode``), the most a session can deliver with the data already in GPU memory;
- ``play``: hot, the file read once first, then ``--seconds`` of playback around the series; cold
  (``drop-all``: the whole page cache dropped, root; ``cold``: the file evicted), one lap from frame 0
  without loop, each frame read from the disk once (a seek to frame 0 right after the drop, so that
  nothing loaded before counts). Delivered: images the browser showed per second; streamed: frames the
  session rendered per second (a frame the browser had no time for is dropped, not waited for);
- ``jump``: paused, a seek to a frame half the series away (not loaded ahead), timed from the message
  to the new frame's image decoded in the browser, ``--jumps`` times; cold drops the cache first.

The yardsticks of the same call: the server's (the disk by ``headrace probe`` of the file's folder, the
pinned host-to-device rate). Writes ``viewer.json`` and ``viewer.csv`` under ``--out``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np

import headrace
from headrace.bench.harness import Measurement, measure, write_csv
from headrace.viewer import ViewerServer
from headrace.viewer.client import ProtocolClient
from headrace.viewer.scenes import ParticleScene, VolumeScene, scene_kind
from headrace.viewer.session import encode_jpeg

__all__ = ["main"]


def render_only(path: str, device: int | None, width: int, height: int, repeats: int) -> dict[str, float]:
    """Frames per second of the session's scene on one resident frame: render alone, and render + JPEG."""
    from headrace import _ext

    ds = headrace.open(path)
    scene = (VolumeScene if scene_kind(ds) == "volume" else ParticleScene)(ds, device, width, height)
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
    return {"render_fps": 1 / statistics.median(alone.seconds), "render_encode_fps": 1 / statistics.median(encoded.seconds)}


async def _play(url: str, cache: str, seconds: float, frames: int, paths: list[str]) -> dict[str, Any]:
    """One playback as a browser sees it; hot: ``seconds`` around the series, cold: one lap from frame 0,
    no loop, the cache dropped just before."""
    from headrace.bench.harness import uncache

    async with aiohttp.ClientSession() as http:
        client = await ProtocolClient.connect(http, url)
        await client.pump(until=lambda c: bool(c.shown and c.states))
        hot = cache == "hot"
        await client.send({"type": "set", "fps": 0, "loop": hot})
        await client.pump(until=lambda c: c.states[-1]["fps"] == 0)
        first = len(client.shown)
        if hot:
            start = time.perf_counter()
            await client.send({"type": "play"})
        else:
            # What the session loaded ahead on connecting is read again: the cache dropped now, a seek
            # cancels the frames waiting in slots and reads from frame 0 on.
            await client.pump(0.5)
            first = len(client.shown)
            await asyncio.to_thread(uncache, paths, cache)
            start = time.perf_counter()
            await client.send({"type": "seek", "frame": 0})
            await client.send({"type": "play"})
        if hot:
            await client.pump(seconds)
        else:
            await client.pump(until=lambda c: not c.states[-1]["playing"] and c.shown[-1].frame == frames - 1
                              and c.states[-1]["frame"] == frames - 1, limit=600)
        elapsed = time.perf_counter() - start
        await client.send({"type": "pause"})
        await client.pump(0.6)  # the panel's last numbers
        shown = client.shown[first:]
        stats = client.stats[-1] if client.stats else {}
        await client.close()
    return {"seconds": elapsed, "shown": len(shown), "frames_shown": sorted({s.frame for s in shown}),
            "panel": stats}


async def _jumps(url: str, cache: str, frames: int, jumps: int, paths: list[str]) -> list[float]:
    """Seconds from a seek half the series away to its image decoded, per jump."""
    from headrace.bench.harness import uncache

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
            start = time.perf_counter()
            await client.send({"type": "seek", "frame": target})
            def arrived(c: ProtocolClient, n: int = count, t: int = target) -> bool:
                return len(c.shown) > n and c.shown[-1].frame == t

            await client.pump(until=arrived, limit=120)
            latencies.append(client.shown[-1].at - start)
            current = target
            await client.pump(0.3)  # what the seek loaded ahead settles
        await client.close()
    return latencies


def run_file(path: str, device: int | None, caches: list[str], seconds: float, jumps: int, repeats: int,
             disk_rate: float | None) -> dict[str, Any]:
    from headrace.bench.harness import uncache, warm_page_cache
    from headrace.engine import release_engines

    ds = headrace.open(path)
    frames = len(ds.frames)
    server = ViewerServer([path], device="cpu" if device is None else device, fps=0, disk_rate=disk_rate)
    settings = server.settings
    raw_frame = sum(ds.element_count(0, f) * ds.field(f).components * np.dtype(ds.field(f).dtype).itemsize
                    for f in server.files[0]["fields"])
    rates = render_only(path, settings.device, settings.width, settings.height, repeats)
    url = server.start()
    result: dict[str, Any] = {"file": path, "kind": server.files[0]["kind"], "frames": frames, "frame_bytes": raw_frame,
                              "device": server.device_name, "width": settings.width, "height": settings.height, **rates,
                              "runs": []}
    try:
        for cache in caches:
            if cache != "hot":
                # The engine page-locks a file it finds cached (replayed by DMA): such pages outlive a drop
                # of the page cache. A cold run starts from an engine that holds nothing, as after a reboot.
                release_engines()
            how = warm_page_cache([path]) if cache == "hot" else uncache([path], cache)
            played = asyncio.run(_play(url, cache, seconds, frames, [path]))
            latencies = asyncio.run(_jumps(url, cache, frames, jumps, [path]))
            delivered = played["shown"] / played["seconds"]
            result["runs"].append({
                "cache": cache, "cache_method": how, **played, "delivered_fps": delivered,
                "x_render_only": delivered / rates["render_fps"], "x_render_encode": delivered / rates["render_encode_fps"],
                "jump_s": latencies, "jump_median_s": statistics.median(latencies)})
    finally:
        server.stop()
    server.ceilings.wait(120)
    result["disk_gbps"] = None if server.ceilings.disk is None else server.ceilings.disk / 1e9
    result["h2d_gbps"] = None if server.ceilings.h2d is None else server.ceilings.h2d / 1e9
    result["ceilings"] = {"disk": server.ceilings.disk_how, "h2d": server.ceilings.h2d_how}
    for run in result["runs"]:
        gbps = run["panel"].get("gbps")
        run["delivered_gbps"] = run["shown"] * raw_frame / run["seconds"] / 1e9
        run["panel_gbps"] = gbps
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--device", default="0", help="a GPU number or cpu (default 0)")
    parser.add_argument("--cache", default="hot,drop-all", help="cache states, comma-separated: hot, cold, drop-all")
    parser.add_argument("--seconds", type=float, default=6.0, help="hot playback per run (default 6)")
    parser.add_argument("--jumps", type=int, default=5, help="slider jumps timed per cache state (default 5)")
    parser.add_argument("--repeats", type=int, default=20, help="renders timed for the render-only rate (default 20)")
    parser.add_argument("--disk-rate", type=float, default=None, help="bytes/s (default: the server's probe)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    device = None if args.device == "cpu" else int(args.device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for path in args.files:
        result = run_file(os.fspath(path), device, args.cache.split(","), args.seconds, args.jumps, args.repeats,
                          args.disk_rate)
        results.append(result)
        for run in result["runs"]:
            print(f"{Path(path).name} {result['kind']} {run['cache']}: {run['delivered_fps']:.1f} frames/s delivered "
                  f"({run['shown']} in {run['seconds']:.2f} s, {run['delivered_gbps']:.2f} GB/s), render-only "
                  f"{result['render_fps']:.1f}, render+encode {result['render_encode_fps']:.1f} -> x{run['x_render_only']:.2f}; "
                  f"jump {1e3 * run['jump_median_s']:.0f} ms (median of {len(run['jump_s'])}); panel {run['panel_gbps']}",
                  flush=True)
        print(f"  ceilings: disk {result['disk_gbps']} GB/s ({result['ceilings']['disk']}), h2d {result['h2d_gbps']} GB/s",
              flush=True)
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
