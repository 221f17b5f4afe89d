"""Serve a particle series to browsers from Python (a notebook does the same), then be a browser for a
moment: take the first image, play, and read the engine's numbers the page shows.

    python examples/04_view_in_the_browser.py [OUT_DIR]

`headrace view FILE` does this from the command line; open the printed address in a browser.
"""

import asyncio
import sys
import urllib.request
from pathlib import Path

import aiohttp

from headrace.generate import generate_particles
from headrace.viewer import ViewerServer
from headrace.viewer.client import ProtocolClient

out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
path = generate_particles(out / "example-view.hrc", particles=20_000, frames=6, seed=4)
viewer = ViewerServer([str(path)], device="auto", disk_rate=2e9)  # the GPU when there is one, else the CPU
url = viewer.start()  # 127.0.0.1, a free port
print(f"serving {path.name} at {url}")
with urllib.request.urlopen(url) as page:
    assert page.status == 200 and b"headrace" in page.read()


async def watch() -> None:
    async with aiohttp.ClientSession() as http:
        browser = await ProtocolClient.connect(http, url)
        renderer = browser.hello["renderer"]
        print(f"rendered by {renderer['device']} at {renderer['width']}x{renderer['height']} {renderer['note']}")
        await browser.send({"type": "play"})
        await browser.pump(until=lambda b: len(b.shown) >= 8 and bool(b.stats))
        frames = [shown.frame for shown in browser.shown]
        # In order, around again; an image the browser had no time for is skipped, never shown late.
        assert len(set(frames)) >= 4 and all((b - a) % 6 >= 1 for a, b in zip(frames, frames[1:])), frames
        (out / "frame.jpg").write_bytes(browser.shown[-1].payload)
        stats = browser.stats[-1]
        print(f"frames {frames}; {stats['gbps'] * 1e3:.1f} MB/s into memory, {stats['rendered_fps']:.0f} images/s; "
              f"last image in {out / 'frame.jpg'}")
        await browser.close()


asyncio.run(watch())
viewer.stop()
