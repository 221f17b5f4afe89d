"""``headrace view``: play, scrub and orbit through time series in the browser, streamed by headrace.

    server = headrace.viewer.ViewerServer(["p.hrc", "v.hrc"], device="auto")
    server.run("127.0.0.1", 8765)           # http://127.0.0.1:8765/

The server (:mod:`headrace.viewer.server`, aiohttp) serves one page and one WebSocket per browser; each
socket gets a session (:mod:`headrace.viewer.session`): its own camera, playback and frame stream on the
process's engine, rendered on the GPU (or the CPU reference) by a scene (:mod:`headrace.viewer.scenes`)
and sent as JPEG images, the latest only, so that a slow browser misses frames instead of holding the
stream back. docs/viewer.md describes the page and the protocol.
"""

from headrace.imaging import OrbitCamera
from headrace.viewer.server import ViewerServer

__all__ = ["OrbitCamera", "ViewerServer"]
