"""A browser stand-in that speaks the page's protocol (docs/viewer.md): it decodes every image it gets, as
the page does, before acknowledging it. The benchmarks measure frames delivered through it where no
browser runs (the GPU machine), and the tests drive the server with it.

    async with aiohttp.ClientSession() as http:
        client = await ProtocolClient.connect(http, "http://127.0.0.1:8765/")
        await client.send({"type": "play"})
        await client.pump(seconds=5)
        client.shown      # images decoded and acknowledged, with when
"""

from __future__ import annotations

import asyncio
import io
import json
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

__all__ = ["ProtocolClient", "Shown"]


@dataclass
class Shown:
    """An image on the stand-in's screen: its header, its JPEG bytes and when it was decoded."""

    header: dict[str, Any]
    payload: bytes
    at: float

    @property
    def frame(self) -> int:
        return int(self.header["frame"])


@dataclass
class ProtocolClient:
    socket: Any  # aiohttp.ClientWebSocketResponse
    hello: dict[str, Any]
    shown: list[Shown] = field(default_factory=list)
    states: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    stats: list[dict[str, Any]] = field(default_factory=list)
    decode: bool = True  # decode each JPEG before acknowledging it (what the page's img.decode() costs)

    @classmethod
    async def connect(cls, http: aiohttp.ClientSession, url: str, *, decode: bool = True) -> ProtocolClient:
        socket = await http.ws_connect(url.rstrip("/") + "/ws", max_msg_size=1 << 30)
        hello = await socket.receive_json(timeout=60)
        return cls(socket, hello, decode=decode)

    async def send(self, message: dict[str, Any]) -> None:
        await self.socket.send_json(message)

    async def close(self) -> None:
        await self.socket.close()

    async def pump(self, seconds: float = 0.0, until: Callable[[ProtocolClient], bool] | None = None,
                   ack: bool = True, limit: float = 60.0) -> None:
        """Reads messages for ``seconds``, or until ``until(self)`` holds (AssertionError past ``limit``
        seconds). ``ack=False``: a browser that never shows what it gets."""
        start = time.perf_counter()
        while True:
            elapsed = time.perf_counter() - start
            if until is not None and until(self):
                return
            if until is None and elapsed >= seconds:
                return
            if elapsed >= limit:
                raise AssertionError(f"the server did not get there in {limit} s: {len(self.shown)} images, "
                                     f"last state {self.states[-1:]}, errors {self.errors[-3:]}")
            wait = 0.2 if until is not None else min(0.2, max(seconds - elapsed, 0.001))
            try:
                message = await self.socket.receive(timeout=wait)
            except asyncio.TimeoutError:
                continue
            if message.type == aiohttp.WSMsgType.BINARY:
                size = struct.unpack("<I", message.data[:4])[0]
                header = json.loads(message.data[4:4 + size])
                payload = bytes(message.data[4 + size:])
                if self.decode:
                    await asyncio.to_thread(_decode, payload)
                self.shown.append(Shown(header, payload, time.perf_counter()))
                if ack:
                    await self.socket.send_json({"type": "ack", "seq": header["seq"]})
            elif message.type == aiohttp.WSMsgType.TEXT:
                body = json.loads(message.data)
                {"state": self.states, "error": self.errors, "stats": self.stats}.get(body["type"], []).append(body)
            else:
                raise AssertionError(f"the socket closed: {message}")


def _decode(payload: bytes) -> None:
    from PIL import Image

    with Image.open(io.BytesIO(payload)) as picture:
        picture.load()
