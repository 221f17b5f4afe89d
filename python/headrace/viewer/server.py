"""The viewer's web server (aiohttp): the page, its script and style, and one WebSocket per browser.

Nothing else is served: the files named on the command line reach a browser only as images, chosen by
number over the socket; any other path gets 404, and a socket opened by a page of another site gets 403. Each socket gets a :class:`Session` (its own camera,
playback and stream on the process's engine); a socket that closes, or vanishes, ends its session, which
frees its stream and renderer. Protocol: docs/viewer.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import signal
import struct
import threading
import time
from collections import deque
from importlib import resources
from urllib.parse import urlsplit
from typing import Any

from aiohttp import WSCloseCode, WSMsgType, web

import headrace
from headrace import _ext, errors
from headrace.codecs import disk_rate_of
from headrace.imaging import COLOUR_MAPS
from headrace.viewer.scenes import describe_file
from headrace.viewer.session import STATS_WINDOW_S, Session, SessionSettings
from headrace.workloads.streamlines.overlay import PathOverlay

__all__ = ["ViewerServer", "Ceilings", "STATIC_FILES"]

# The page's files: name in the URL -> (file in headrace/viewer/static, content type).
STATIC_FILES = {"/": ("index.html", "text/html"), "/static/viewer.js": ("viewer.js", "text/javascript"),
                "/static/viewer.css": ("viewer.css", "text/css")}
STATS_PERIOD_S = 0.5
# Images sent and not yet acknowledged, at most: two, so that the browser decodes one while the next
# travels, and never more than that behind.
IN_FLIGHT = 2
# An image the browser has not acknowledged after this long is taken as lost: the next one goes anyway.
ACK_TIMEOUT_S = 5.0


class Ceilings:
    """The yardsticks of the panel, measured once in the background when the server starts: the disk's
    sequential read rate under the first file's folder (``headrace probe``) unless given, and the pinned
    host-to-device copy rate of the GPU."""

    def __init__(self, folder: str, device: int | None, disk_rate: float | None) -> None:
        self.disk: float | None = disk_rate
        self.disk_how = "given (--disk-rate)" if disk_rate is not None else "being measured"
        self.h2d: float | None = None
        self.h2d_how = "no GPU" if device is None else "being measured"
        self._thread = threading.Thread(target=self._measure, args=(folder, device, disk_rate is None), daemon=True,
                                        name="headrace-view-ceilings")
        self._thread.start()

    def _measure(self, folder: str, device: int | None, probe_disk: bool) -> None:
        if device is not None:
            try:
                self.h2d = _ext.pinned_copy_rate(device)
                self.h2d_how = "pinned copies of 256 MiB, the fastest of 3"
            except errors.Error as error:
                self.h2d_how = f"not measured: {error}"
        if probe_disk:
            try:
                self.disk, self.disk_how = disk_rate_of(folder)
            except (errors.Error, OSError) as error:
                self.disk_how = f"not measured: {error}"

    def wait(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)


class ViewerServer:
    """Serves ``paths`` to browsers. ``device``: a GPU ordinal, ``"cpu"`` (the CPU reference) or
    ``"auto"`` (GPU 0 when there is one, else the CPU, said on the page); ``width``/``height`` default to
    1024 x 768 on a GPU and 512 x 384 on the CPU. ``disk_rate`` (bytes/s): the disk's ceiling for the panel
    (None: a short probe of the first file's folder). ``pathlines``: an ``.npz`` of paths (``headrace trace
    --pathlines``) drawn over every image at its frame's time (:class:`PathOverlay`)."""

    def __init__(self, paths: list[str], *, device: int | str = "auto", width: int | None = None,
                 height: int | None = None, quality: int = 85, fps: float = 30.0, prefetch: int = 3,
                 footprint: float = 0.0, disk_rate: float | None = None, pathlines: str | os.PathLike | None = None) -> None:
        if not paths:
            raise errors.UsageError("name at least one file to view")
        self.datasets = [headrace.open(os.fspath(p)) for p in paths]
        # Described from their indexes; a file the viewer cannot draw fails here, named, before any work.
        self.files = [{"id": k, **describe_file(ds)} for k, ds in enumerate(self.datasets)]
        ordinal, self.note = _pick_device(device)
        on_gpu = ordinal is not None
        width = width or (1024 if on_gpu else 512)
        height = height or (768 if on_gpu else 384)
        if not (16 <= width <= 8192 and 16 <= height <= 8192):
            raise errors.UsageError(f"image size {width} x {height}: expected 16 to 8192 pixels a side")
        if not 1 <= quality <= 100:
            raise errors.UsageError(f"JPEG quality {quality}: expected 1 to 100")
        self.pathlines: dict[str, Any] | None = None
        overlay = None
        if pathlines is not None:
            overlay = PathOverlay.load(pathlines)
            self.pathlines = {"file": os.path.basename(os.fspath(pathlines)), "paths": overlay.count}
        self.settings = SessionSettings(ordinal, width, height, quality, fps, prefetch, footprint, overlay)
        self.device_name = _device_name(ordinal)
        self.ceilings = Ceilings(os.path.dirname(os.path.abspath(self.datasets[0].path)), ordinal, disk_rate)
        self.sessions: dict[int, Session] = {}
        self._sockets: set[web.WebSocketResponse] = set()
        self._numbers = itertools.count(1)
        self._thread: threading.Thread | None = None
        self._serving: dict[str, Any] = {}

    # ---- the application ----
    def app(self) -> web.Application:
        app = web.Application()
        for route in STATIC_FILES:
            app.router.add_get(route, self._static)
        app.router.add_get("/ws", self._socket)
        app.on_shutdown.append(self._shutdown)
        return app

    async def _static(self, request: web.Request) -> web.Response:
        name, content_type = STATIC_FILES[request.path]
        body = resources.files("headrace.viewer").joinpath("static").joinpath(name).read_bytes()
        return web.Response(body=body, content_type=content_type, headers={"Cache-Control": "no-cache"})

    async def _shutdown(self, app: web.Application) -> None:
        # Closing the sockets ends their handlers, which end their sessions; then any session left.
        await asyncio.gather(*(socket.close(code=WSCloseCode.GOING_AWAY, message=b"the server stops")
                               for socket in list(self._sockets)), return_exceptions=True)
        await asyncio.gather(*(asyncio.to_thread(s.close) for s in list(self.sessions.values())))

    def hello(self, number: int) -> dict[str, Any]:
        settings = self.settings
        return {"type": "hello", "session": number, "files": self.files, "colour_maps": list(COLOUR_MAPS),
                "renderer": {"device": self.device_name, "gpu": settings.device is not None, "width": settings.width,
                             "height": settings.height, "note": self.note}, "pathlines": self.pathlines}

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        # A page of another site open in the same browser may not watch the files: a browser's socket
        # names the page it came from (Origin), and only this server's own page is let in.
        origin = request.headers.get("Origin")
        if origin is not None and urlsplit(origin).netloc != request.host:
            raise web.HTTPForbidden(text=f"a page from {origin} may not connect; open http://{request.host}/")
        socket = web.WebSocketResponse(heartbeat=10.0, max_msg_size=1 << 20)
        await socket.prepare(request)
        self._sockets.add(socket)
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

        def notify(kind: str, message: dict[str, Any]) -> None:  # from the session's thread
            if kind == "image":
                loop.call_soon_threadsafe(wake.set)
            else:
                loop.call_soon_threadsafe(outbox.put_nowait, message)

        number = next(self._numbers)
        await socket.send_json(self.hello(number))
        session = Session(number, self.datasets, self.settings, notify)
        self.sessions[number] = session
        unacked: deque[float] = deque()  # when the images the browser has not shown yet were sent
        sender = asyncio.create_task(self._send(socket, session, wake, outbox, unacked))
        try:
            async for message in socket:
                if message.type != WSMsgType.TEXT:
                    continue
                try:
                    command = json.loads(message.data)
                    if not isinstance(command, dict):
                        raise ValueError("expected a JSON object")
                except ValueError as error:
                    await socket.send_json({"type": "error", "message": f"a message that is not a JSON object: {error}"})
                    continue
                if command.get("type") == "ack":
                    session.acknowledged()
                    if unacked:
                        unacked.popleft()
                    wake.set()
                else:
                    session.command(command)
        finally:
            # The sender stops (it may have failed already, writing to a browser that vanished); the session
            # ends whatever happened to it.
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)
            self.sessions.pop(number, None)
            self._sockets.discard(socket)
            await asyncio.to_thread(session.close)
        return socket

    async def _send(self, socket: web.WebSocketResponse, session: Session, wake: asyncio.Event,
                    outbox: asyncio.Queue[dict[str, Any]], unacked: deque[float]) -> None:
        """The session's messages and images to the browser: an image only while fewer than IN_FLIGHT are
        unacknowledged (``unacked``: when each was sent; the socket's reader pops them)."""
        next_stats = time.perf_counter() + STATS_PERIOD_S
        while not socket.closed:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(wake.wait(), timeout=max(0.01, min(STATS_PERIOD_S, next_stats - time.perf_counter())))
            wake.clear()
            while not outbox.empty():
                await socket.send_json(outbox.get_nowait())
            while unacked and time.perf_counter() - unacked[0] > ACK_TIMEOUT_S:
                unacked.popleft()
            if len(unacked) < IN_FLIGHT:
                taken = session.take_image()
                if taken is not None:
                    header, payload = taken
                    head = json.dumps(header).encode()
                    await socket.send_bytes(struct.pack("<I", len(head)) + head + payload)
                    unacked.append(time.perf_counter())
            if time.perf_counter() >= next_stats:
                await socket.send_json(self.stats(session))
                next_stats = time.perf_counter() + STATS_PERIOD_S

    def stats(self, session: Session) -> dict[str, Any]:
        """The panel's numbers for a session over the last STATS_WINDOW_S seconds."""
        now = time.perf_counter()
        records = [r for r in list(session.records) if now - r.at <= STATS_WINDOW_S]
        acks = [t for t in list(session.acks) if now - t <= STATS_WINDOW_S]
        streamed = [r for r in records if r.raw_bytes]
        span = STATS_WINDOW_S
        if records:
            span = min(STATS_WINDOW_S, max(now - min(r.at for r in records), 1e-3))

        def mean_ms(values: list[float]) -> float:
            return 1e3 * sum(values) / len(values) if values else 0.0

        ceilings = self.ceilings
        return {"type": "stats", "gbps": sum(r.raw_bytes for r in streamed) / span / 1e9,
                "disk_gbps": None if ceilings.disk is None else ceilings.disk / 1e9,
                "h2d_gbps": None if ceilings.h2d is None else ceilings.h2d / 1e9,
                "shown_fps": len(acks) / STATS_WINDOW_S, "rendered_fps": len(records) / span, "dropped": session.dropped,
                "frame_ms": {"wait": mean_ms([r.wait_s for r in streamed]), "render": mean_ms([r.render_s for r in records]),
                             "encode": mean_ms([r.encode_s for r in records if r.encode_s])},
                "stream_ms": {"io": mean_ms([r.io_s for r in streamed]),
                              "decode": mean_ms([r.decode_s for r in streamed]), "h2d": mean_ms([r.h2d_s for r in streamed])},
                "bytes_from_cache": sum(r.bytes_from_cache for r in streamed),
                "bytes_from_disk": sum(r.bytes_from_disk for r in streamed),
                "path": session.describe_path(), "device": self.device_name,
                "ceilings": {"disk": ceilings.disk_how, "h2d": ceilings.h2d_how}}

    # ---- running ----
    async def serve(self, host: str, port: int, stop: asyncio.Event, ready: Any = None) -> None:
        """Serves until ``stop`` is set; ``ready(port)`` is called once it listens (port 0: a free one)."""
        runner = web.AppRunner(self.app(), handle_signals=False, shutdown_timeout=5.0)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
            if ready is not None:
                ready(runner.addresses[0][1])
            await stop.wait()
        finally:
            await runner.cleanup()  # on_shutdown: every session ends

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serves from a thread of its own (a notebook, a test) until :meth:`stop`; returns the page's URL
        (port 0: a free port)."""
        if self._thread is not None:
            raise errors.UsageError("this viewer is serving already; stop() it first")
        started = threading.Event()
        state: dict[str, Any] = {"loop": asyncio.new_event_loop()}
        state["stop"] = asyncio.Event()

        def ready(bound: int) -> None:
            state["port"] = bound
            started.set()

        def thread() -> None:
            loop = state["loop"]
            try:
                loop.run_until_complete(self.serve(host, port, state["stop"], ready))
            except BaseException as error:  # noqa: BLE001 - reported to start()
                state["error"] = error
                started.set()
            finally:
                loop.close()

        self._thread = threading.Thread(target=thread, name="headrace-view-server", daemon=True)
        self._thread.start()
        started.wait()
        if "error" in state:
            self._thread.join()
            self._thread = None
            raise state["error"]
        self._serving = state
        return f"http://{host}:{state['port']}/"

    def stop(self) -> None:
        """Stops what :meth:`start` serves: every session ends, its stream and renderer freed."""
        thread = self._thread
        if thread is None:
            return
        state = self._serving
        state["loop"].call_soon_threadsafe(state["stop"].set)
        thread.join()
        self._thread = None

    def run(self, host: str = "127.0.0.1", port: int = 8765, announce: Any = print) -> None:
        """Serves until interrupted (SIGINT, SIGTERM); ``announce`` gets the line that says where."""
        def ready(bound: int) -> None:
            names = ", ".join(f["name"] for f in self.files)
            settings = self.settings
            where = self.device_name if settings.device is not None else f"the CPU reference. {self.note}"
            shown = f"[{host}]" if ":" in host else host
            announce(f"headrace view: {names} at http://{shown}:{bound}/ (Ctrl-C stops)\n"
                     f"  rendered at {settings.width}x{settings.height} by {where}")

        async def main() -> None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signal_number in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signal_number, stop.set)
            await self.serve(host, port, stop, ready)

        asyncio.run(main())


def _pick_device(device: int | str) -> tuple[int | None, str]:
    """(GPU ordinal or None, what the page says about it)."""
    if device == "cpu":
        return None, "Asked for with --device cpu."
    if device == "auto":
        if _ext.gpu_count() > 0:
            return 0, ""
        reason = _ext.gpu_unavailable_reason() or "the CUDA driver sees no GPU"
        return None, f"{reason[:1].upper()}{reason[1:]}."
    try:
        ordinal = int(device)
    except (TypeError, ValueError):
        raise errors.UsageError(f"device {device!r}: expected auto, cpu or a GPU number") from None
    count = _ext.gpu_count()
    if not 0 <= ordinal < count:
        reason = _ext.gpu_unavailable_reason()
        raise errors.UsageError(f"device {ordinal}: this machine has {count} GPU(s)" + (f" ({reason})" if reason else "")
                                         + "; use --device cpu for the CPU reference")
    return ordinal, ""


def _device_name(ordinal: int | None) -> str:
    if ordinal is None:
        return "CPU reference"
    gpus = _ext.gpu_environment()["gpus"]
    named = [g["name"] for g in gpus if g.get("ordinal") == ordinal]
    return f"{named[0]} (GPU {ordinal})" if named else f"GPU {ordinal}"
