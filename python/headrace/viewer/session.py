"""One browser's session: its playback, camera, look and frame stream, and a thread that renders.

The thread takes the page's commands, streams frames through the process's engine (a
:class:`headrace.stream.FrameStream` of the scene's fields: slots filled ahead, a seek cancels what is in
flight) and renders each with the session's camera; encoder threads turn the latest image into a JPEG
while the next ones render. Neither waits for the browser: the session keeps only the latest image, the
socket sends it once the browser has room for it (:data:`headrace.viewer.server.IN_FLIGHT` images not yet
acknowledged), and an image replaced before it was encoded or sent counts as dropped. While paused, the frame on
screen stays resident: turning the camera or changing the look renders it again without reading it.
"""

from __future__ import annotations

import io
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from headrace import _ext
from headrace.errors import Error, UsageError
from headrace.imaging import OrbitCamera
from headrace.viewer.scenes import Scene, make_scene

__all__ = ["Session", "SessionSettings", "FrameRecord", "encode_jpeg"]

# Seconds of history the panel's rates are taken over.
STATS_WINDOW_S = 2.0
# While playing, a new camera is drawn on the frame on screen only when the next frame is further off.
REDRAW_SLACK_S = 0.04
# JPEG encoders a session runs at once: a 1024 x 768 image of ten million spheres takes 9 ms to encode,
# twice its rendering on an H200, so one encoder would hold the frame rate to the encoder's.
ENCODERS = 2


@dataclass(frozen=True)
class SessionSettings:
    """What every session of a server shares: the renderer's device (None: the CPU reference), image size,
    JPEG quality, frame-rate cap, the frames a stream holds ahead, a volume's pixel footprint and the paths
    drawn over every image at its frame's time (a :class:`headrace.workloads.streamlines.PathOverlay`, or None)."""

    device: int | None
    width: int
    height: int
    quality: int = 85
    fps: float = 30.0
    prefetch: int = 3
    footprint: float = 0.0
    pathlines: Any = None


@dataclass
class FrameRecord:
    """One image made: when, of which frame, its bytes and where its time went (seconds)."""

    at: float
    frame: int
    raw_bytes: int = 0  # the frame's bytes delivered by the stream (0: a frame already resident, drawn again)
    bytes_from_cache: int = 0
    bytes_from_disk: int = 0
    wait_s: float = 0.0
    render_s: float = 0.0
    encode_s: float = 0.0
    io_s: float = 0.0
    decode_s: float = 0.0
    h2d_s: float = 0.0


def encode_jpeg(image: Any, quality: int) -> bytes:
    """An RGBA image as JPEG bytes (its alpha dropped)."""
    from PIL import Image

    height, width = image.shape[:2]
    picture = Image.frombuffer("RGBA", (width, height), image, "raw", "RGBA", 0, 1).convert("RGB")
    out = io.BytesIO()
    picture.save(out, format="JPEG", quality=quality)
    return out.getvalue()


@dataclass
class _Playback:
    file: int = 0
    frame: int = 0
    playing: bool = False
    loop: bool = True
    fps: float = 30.0
    stride: int = 1


@dataclass
class _Latest:
    """The one image waiting for the encoder (raw) and the one waiting for the socket (encoded), latest wins
    at both, and the counters around them."""

    lock: threading.Condition = field(default_factory=threading.Condition)
    raw: tuple[int, Any, dict[str, Any], FrameRecord] | None = None  # (render number, image, header, record)
    rendered: int = 0   # images rendered so far
    encoded: int = 0    # the render number of the newest image encoded
    header: dict[str, Any] | None = None
    payload: bytes = b""
    seq: int = 0
    dropped: int = 0


class Session:
    """A browser's session over the server's datasets. ``notify(kind, message)`` is called from the
    session's thread: ``"state"``/``"error"`` with a JSON-able dict, ``"image"`` when a new image waits
    (take it with :meth:`take_image`). Commands (:meth:`command`) are the page's messages as dicts."""

    def __init__(self, number: int, datasets: list[Any], settings: SessionSettings,
                 notify: Callable[[str, dict[str, Any]], None]) -> None:
        self.number, self.datasets, self.settings, self._notify = number, datasets, settings, notify
        self._commands: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._latest = _Latest()
        self.records: deque[FrameRecord] = deque(maxlen=4096)
        self.acks: deque[float] = deque(maxlen=4096)
        self._playback = _Playback(fps=settings.fps)
        self._advanced_at = 0.0
        self._scene: Scene | None = None
        self._stream: Any = None
        self._order: deque[int] = deque()  # frames asked of the stream, not yet delivered
        self._current: Any = None          # the frame on screen, resident
        self.camera: OrbitCamera | None = None
        self._render_stream = _ext.CudaStream(settings.device) if settings.device is not None else None
        self._thread = threading.Thread(target=self._run, name=f"headrace-view-{number}", daemon=True)
        # JPEG encoding on threads of their own: the next frames render meanwhile (all let go of the GIL).
        self._encoders = [threading.Thread(target=self._encode, name=f"headrace-view-{number}-jpeg-{k}", daemon=True)
                          for k in range(ENCODERS)]
        self.closed = False
        self.error: BaseException | None = None
        self._thread.start()
        for encoder in self._encoders:
            encoder.start()

    # ---- the socket's side ----
    def command(self, message: dict[str, Any]) -> None:
        self._commands.put(message)

    def take_image(self) -> tuple[dict[str, Any], bytes] | None:
        """The waiting image, if any (the socket sends it), leaving none waiting."""
        latest = self._latest
        with latest.lock:
            if latest.header is None:
                return None
            taken = (latest.header, latest.payload)
            latest.header, latest.payload = None, b""
            return taken

    def acknowledged(self) -> None:
        self.acks.append(time.perf_counter())

    @property
    def dropped(self) -> int:
        return self._latest.dropped

    def close(self, timeout: float = 30.0) -> None:
        """Stops the threads; the session's closes the stream (slot buffers back to the engine) and drops the
        renderer."""
        if not self.closed:
            self.closed = True
            self._commands.put(None)
            with self._latest.lock:
                self._latest.lock.notify_all()
        self._thread.join(timeout)
        for encoder in self._encoders:
            encoder.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() or any(encoder.is_alive() for encoder in self._encoders)

    # ---- the session's thread ----
    def _run(self) -> None:
        try:
            self._open(0)
            while not self.closed:
                try:
                    self._step()
                except Error as error:  # a frame that failed to load, a look the renderer refused: said, paused
                    self._playback.playing = False
                    self._notify("error", {"type": "error", "message": str(error)})
                    if self._scene is not None:
                        self._send_state()
        except BaseException as error:  # noqa: BLE001 - the thread's end: reported, then cleaned up
            self.error = error
            self._notify("error", {"type": "error", "message": f"the session stopped: {error}"})
        finally:
            self._close_stream()
            self._scene = None

    def _step(self) -> None:
        """One turn: the commands that came, then one image if one is due, else a wait for a command.
        While playing, a camera or look change is drawn at once when the next frame is not due soon."""
        play = self._playback
        dirty = self._drain(block=False)
        if self.closed:
            return
        if not play.playing:
            if dirty or self._drain(block=True, timeout=0.5):
                self._redraw()
            return
        due = self._advanced_at + (1.0 / play.fps if play.fps > 0 else 0.0)
        if due - time.perf_counter() > 0:
            if dirty or self._drain(block=True, timeout=due - time.perf_counter()):
                if due - time.perf_counter() > REDRAW_SLACK_S:
                    self._redraw()
            return
        self._advanced_at = time.perf_counter()
        self._advance()

    def _drain(self, block: bool, timeout: float | None = None) -> bool:
        """Applies the waiting commands; True when the image on screen must be drawn again."""
        dirty = False
        try:
            message = self._commands.get(block=block, timeout=timeout)
            while True:
                if message is None:
                    self.closed = True
                    return False
                try:
                    dirty |= self._apply(message)
                except (Error, ValueError, KeyError, TypeError) as error:
                    self._notify("error", {"type": "error", "message": str(error)})
                message = self._commands.get_nowait()
        except queue.Empty:
            return dirty

    def _apply(self, message: dict[str, Any]) -> bool:
        play, kind = self._playback, message.get("type")
        if kind == "open":
            self._open(int(message["file"]))
            return False
        if kind == "play":
            if not play.playing:
                play.playing = True
                following = self._next_of(play.frame)
                if not self._order or self._order[0] != following:
                    self._schedule(following)
            self._send_state()
            return False
        if kind == "pause":
            play.playing = False
            self._send_state()
            return False
        if kind == "step":
            play.playing = False
            by = int(message.get("by", 1))
            target = play.frame + by * play.stride
            frames = self._frame_count()
            self._show(target % frames if play.loop else min(max(target, 0), frames - 1))
            return False
        if kind == "seek":
            self._show(int(message["frame"]))
            return False
        if kind == "set":
            if "loop" in message:
                play.loop = bool(message["loop"])
            if "fps" in message:
                fps = float(message["fps"])
                if not 0 <= fps <= 240:
                    raise UsageError(f"fps {fps}: expected 0 (as fast as it goes) to 240")
                play.fps = fps
            if "stride" in message:
                stride = int(message["stride"])
                if stride < 1:
                    raise UsageError(f"stride {stride}: expected 1 or more")
                play.stride = stride
            self._schedule(self._next_of(play.frame))  # what the stream loads ahead follows the new order
            self._send_state()
            return False
        if kind == "camera":
            return self._move_camera(message)
        if kind == "style":
            scene = self._scene
            assert scene is not None
            changes = {k: v for k, v in message.items() if k != "type"}
            if scene.set_style(changes, self._stream_handle()):
                self._reopen_stream()
                return False
            self._send_state()
            return True
        raise UsageError(f"unknown message type {kind!r}")

    def _move_camera(self, message: dict[str, Any]) -> bool:
        scene, camera = self._scene, self.camera
        assert scene is not None and camera is not None
        action = message.get("action")
        if action == "orbit":
            self.camera = camera.orbited(float(message.get("dx", 0)), float(message.get("dy", 0)))
        elif action == "pan":
            self.camera = camera.panned(float(message.get("dx", 0)), float(message.get("dy", 0)), scene.height)
        elif action == "zoom":
            self.camera = camera.zoomed(float(message.get("factor", 1.0)))
        elif action == "reset":
            self.camera = scene.home
        else:
            raise UsageError(f"camera action {action!r}: expected orbit, pan, zoom or reset")
        return True

    # ---- streams and frames ----
    def _open(self, file: int) -> None:
        if not 0 <= file < len(self.datasets):
            raise UsageError(f"file {file}: this server serves files 0 to {len(self.datasets) - 1}")
        self._close_stream()
        settings = self.settings
        self._scene = make_scene(self.datasets[file], settings.device, settings.width, settings.height, settings.footprint)
        self.camera = self._scene.home
        self._playback.file, self._playback.playing = file, False
        self._reopen_stream(frame=0)

    def _reopen_stream(self, frame: int | None = None) -> None:
        """A stream of the scene's fields (after a change of them), showing ``frame`` (default: the one on screen)."""
        shown = self._playback.frame if frame is None else frame
        self._close_stream()
        scene = self._scene
        assert scene is not None
        self._stream = scene.dataset.stream(fields=scene.fields, device=None if scene.host_frames else self.settings.device,
                                            prefetch=self.settings.prefetch)
        self._order.clear()
        self._show(shown)

    def _release_current(self) -> None:
        """The frame on screen back to the stream, once the render stream is past it."""
        if self._current is not None:
            # A scene of host frames copied what it draws when it prepared the frame: nothing reads it on the GPU.
            host = self._scene is not None and self._scene.host_frames
            self._current.release(stream=None if host else self._stream_handle() or None)
            self._current = None

    def _close_stream(self) -> None:
        self._release_current()
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def _stream_handle(self) -> int:
        return self._render_stream.handle if self._render_stream is not None else 0

    def _frame_count(self) -> int:
        assert self._scene is not None
        return len(self._scene.dataset.frames)

    def _next_of(self, frame: int) -> int:
        return (frame + self._playback.stride) % self._frame_count()

    def _schedule(self, first: int) -> None:
        """Asks the stream for frames from ``first`` on, as playback will show them: a stride apart, around
        again when looping (a lap at a time, extended as it is used)."""
        self._order = deque(self._lap(first))
        self._stream.play(list(self._order))

    def _lap(self, first: int) -> list[int]:
        frames, stride = self._frame_count(), self._playback.stride
        if not self._playback.loop:
            return list(range(first, frames, stride))
        return [(first + k * stride) % frames for k in range(max(1, -(-frames // stride)))]

    def _show(self, frame: int) -> None:
        """Frame ``frame`` on screen now (a seek): from the stream, rendered and published."""
        frames = self._frame_count()
        if not 0 <= frame < frames:
            raise UsageError(f"frame {frame}: this file has frames 0 to {frames - 1}")
        if not self._order or self._order[0] != frame:
            self._schedule(frame)
        self._deliver()

    def _advance(self) -> None:
        """The next frame of playback; at the end without loop, pause on the last."""
        play = self._playback
        if not self._order:
            if not play.loop:
                play.playing = False
                self._send_state()
                return
            self._schedule(self._next_of(play.frame))
        self._deliver()
        if play.loop and len(self._order) < 2 * self.settings.prefetch:
            lap = self._lap(self._next_of(self._order[-1] if self._order else play.frame))
            self._order.extend(lap)
            self._stream.extend(lap)

    def _deliver(self) -> None:
        """Takes the next frame of the stream's order, makes it the one on screen and renders it."""
        scene, stream, handle = self._scene, self._stream, self._stream_handle()
        assert scene is not None
        expected = self._order.popleft()
        self._release_current()
        start = time.perf_counter()
        frame = next(stream)
        got = time.perf_counter()
        assert frame.index == expected, f"the stream delivered frame {frame.index}, expected {expected}"
        self._current = frame
        self._playback.frame = frame.index
        scene.prepare(frame, handle)
        s = frame.stats
        record = FrameRecord(at=0.0, frame=frame.index, raw_bytes=s.raw_bytes, bytes_from_cache=s.bytes_from_cache,
                             bytes_from_disk=s.bytes_from_disk, wait_s=got - start, io_s=s.io_s,
                             decode_s=s.decode_s, h2d_s=s.h2d_s)
        self._render(record)
        self._send_state()

    def _redraw(self) -> None:
        if self._current is not None:
            self._render(FrameRecord(at=0.0, frame=self._current.index))

    def _render(self, record: FrameRecord) -> None:
        scene, frame, camera = self._scene, self._current, self.camera
        assert scene is not None and frame is not None and camera is not None
        start = time.perf_counter()
        image = scene.render(frame, camera, self._stream_handle())
        if self.settings.pathlines is not None:
            image = self.settings.pathlines.draw(image, camera, float(frame.time))
        record.at = time.perf_counter()
        record.render_s = record.at - start
        self.records.append(record)
        header = {"frame": frame.index, "time": float(frame.time), "format": "jpeg", "width": scene.width,
                  "height": scene.height}
        latest = self._latest
        with latest.lock:
            if latest.raw is not None:
                latest.dropped += 1
            latest.rendered += 1
            latest.raw = (latest.rendered, image, header, record)
            latest.lock.notify()

    def _encode(self) -> None:
        """An encoder's thread: the latest rendered image to JPEG, then to the socket's slot unless a newer
        one got there first (encoders finish out of order)."""
        latest = self._latest
        while True:
            with latest.lock:
                while latest.raw is None and not self.closed:
                    latest.lock.wait()
                if self.closed:
                    return
                assert latest.raw is not None
                number, image, header, record = latest.raw
                latest.raw = None
            start = time.perf_counter()
            payload = encode_jpeg(image, self.settings.quality)
            record.encode_s = time.perf_counter() - start
            with latest.lock:
                if number < latest.encoded:
                    latest.dropped += 1
                    continue
                if latest.header is not None:
                    latest.dropped += 1
                latest.encoded = number
                latest.seq += 1
                latest.header, latest.payload = {"seq": latest.seq, **header}, payload
            self._notify("image", {})

    def _send_state(self) -> None:
        play, scene = self._playback, self._scene
        assert scene is not None
        ds = scene.dataset
        self._notify("state", {"type": "state", "file": play.file, "frame": play.frame,
                               "time": float(ds.frames[play.frame].time), "frames": len(ds.frames),
                               "playing": play.playing, "loop": play.loop, "fps": play.fps, "stride": play.stride,
                               "style": dict(scene.style)})

    def describe_path(self) -> str:
        stream = self._stream
        return stream.describe() if stream is not None else ""
