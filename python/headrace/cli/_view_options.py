"""The options of the picture that ``render`` and ``play`` share: where the camera looks from, the
background colour and the frames drawn."""

from __future__ import annotations

import argparse
import math

from headrace.cli._shared import Bounded
from headrace.errors import UsageError

__all__ = ["MOST_FRAME", "finite_numbers", "Camera", "Colour", "FrameRange", "parse_frames"]

MOST_FRAME = (1 << 32) - 1  # a container numbers its frames with 32 bits


def finite_numbers(words: list[str]) -> list[float]:
    """The numbers of ``words``; a ValueError for one that is not a finite number."""
    values = [float(w) for w in words]  # a ValueError for a word that is not a number
    if not all(math.isfinite(v) for v in values):
        raise ValueError
    return values


class Camera(Bounded[str]):
    """--camera: ``orbit:AZ,EL[,DIST]`` (EL strictly between -90 and 90, DIST above 0) or
    ``lookat:EX,EY,EZ:TX,TY,TZ[:UX,UY,UZ]``, finite numbers."""

    least = most = None

    def describe(self) -> str:
        return ("orbit:AZ,EL[,DIST] (degrees around and above the frame's centre, EL between -90 and 90, DIST above 0) "
                "or lookat:EX,EY,EZ:TX,TY,TZ[:UX,UY,UZ]")

    def parse(self, text: str) -> str:
        kind, _, rest = text.partition(":")
        try:
            if kind == "orbit":
                values = finite_numbers(rest.split(","))
                if len(values) not in (2, 3) or not -90 < values[1] < 90 or (len(values) == 3 and values[2] <= 0):
                    raise ValueError
            elif kind == "lookat":
                points = [finite_numbers(part.split(",")) for part in rest.split(":")]
                if len(points) not in (2, 3) or any(len(p) != 3 for p in points) or points[0] == points[1]:
                    raise ValueError
            else:
                raise ValueError
        except ValueError:
            raise self.fail(text) from None
        return text

    def bad_examples(self) -> list[str]:
        return ["", "bogus", "orbit:abc", "orbit:1", "orbit:0,90", "orbit:0,0,0", "orbit:nan,0", "lookat:0,0,0:1,1",
                "lookat:0,0,0:0,0,0"]

    def good_examples(self) -> list[str]:
        return ["orbit:30,20", "orbit:10,15,3", "lookat:0.5,0.5,3:0.5,0.5,0.5", "lookat:0,0,3:0,0,0:0,1,0"]


class Colour(Bounded[tuple]):
    """--background: ``R,G,B``, each a whole number from 0 to 255."""

    least, most = 0, 255

    def describe(self) -> str:
        return "R,G,B, each a whole number from 0 to 255"

    def parse(self, text: str) -> tuple[int, int, int]:
        words = text.split(",")
        if len(words) != 3 or not all(w.strip().isdigit() and int(w) <= 255 for w in words):
            raise self.fail(text)
        return tuple(int(w) for w in words)  # type: ignore[return-value]

    def bad_examples(self) -> list[str]:
        return ["", "bogus", "0,0", "256,0,0", "0,0,0,0", "1.5,0,0", "99999999999999999999,0,0"]

    def good_examples(self) -> list[str]:
        return ["0,0,0", "255,255,255"]


class FrameRange(Bounded[tuple]):
    """--frames: ``A:B``, frames A to B with B excluded (``A:`` to the last frame); whether the file has
    them is the command's to check."""

    least, most = 0, MOST_FRAME

    def describe(self) -> str:
        return "A:B, frames A (from 0) to B, B excluded (A: to the last, :B from the first)"

    def parse(self, text: str) -> tuple[int, int | None]:
        first, colon, last = text.partition(":")
        if not colon or any(word and not word.strip().isdigit() for word in (first, last)):
            raise self.fail(text)
        start, stop = int(first or 0), int(last) if last else None
        if start > MOST_FRAME or (stop is not None and not start < stop <= MOST_FRAME + 1):
            raise self.fail(text)
        return start, stop

    def bad_examples(self) -> list[str]:
        return ["", "bogus", "3", "2:1", "0:0", "a:b", f"0:{MOST_FRAME + 2}"]

    def good_examples(self) -> list[str]:
        return ["0:8", "2:", ":3"]


def parse_frames(text: str | tuple[int, int | None], frame_count: int) -> range:
    """The frames of ``A:B`` (text, or as :class:`FrameRange` parsed it) in a file of ``frame_count``."""
    try:
        first, last = FrameRange().parse(text) if isinstance(text, str) else text
    except argparse.ArgumentTypeError:
        raise UsageError(f"--frames {text!r}: expected A:B") from None
    frames = range(first, frame_count if last is None else last)
    shown = text if isinstance(text, str) else f"{first}:{'' if last is None else last}"
    if not frames or frames.stop > frame_count:
        raise UsageError(f"--frames {shown!r}: the file has frames 0 to {frame_count - 1}")
    return frames
