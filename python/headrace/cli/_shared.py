"""What the subcommands share: the argument types, ``--budget``, the choice of device and the words of
the page-cache states.

Every value the command line takes is parsed by one of the types here, so it is checked once, before
any work, against a range that ``--help`` states. A bad value is a one-line usage error naming the
option and what it takes (exit 2), never a traceback.

Each type keeps its range (``least``, ``most``) and says it in words (``describe()``); the help
formatter appends that to the option's help, and ``tests/python/test_cli_options.py`` drives every
option of every subcommand with values outside it.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import os
import pathlib
import re
import sys
import tempfile
import time
from typing import Any, Generic, TypeVar

from headrace import _ext
from headrace.page_cache import drop_page_cache
from headrace.settings import device_ordinal
from headrace.sizes import describe_size, parse_size

__all__ = ["Parser", "Bounded", "Integer", "Size", "Real", "Items", "Name", "Host", "Word", "Chain", "Device", "Path",
           "OutputFile", "ImageFile", "choose_device", "particle_device", "describe_size", "GPU_ORDINALS", "Budget",
           "add_budget_argument", "MOST_BUDGET_SECONDS", "cache_help", "cache_said", "expect_cache_state"]

T = TypeVar("T")

GPU_ORDINALS = 1023  # the most a --device number may be (CUDA numbers devices from 0)
MOST_BUDGET_SECONDS = 7 * 24 * 3600  # a week at most


class Bounded(Generic[T]):
    """A value type with a stated range; calling it parses one command-line word."""

    least: Any
    most: Any

    def describe(self) -> str:
        raise NotImplementedError

    def parse(self, text: str) -> T:
        raise NotImplementedError

    def __call__(self, text: str) -> T:
        return self.parse(text)

    def bad_examples(self) -> list[str]:
        """Words this type must refuse (the tests drive every option with them)."""
        return ["", "abc"]

    def good_examples(self) -> list[str]:
        """Words this type must take."""
        return []

    def fail(self, text: str) -> argparse.ArgumentTypeError:
        return argparse.ArgumentTypeError(f"expected {self.describe()}, got {text!r}")

    def __repr__(self) -> str:  # argparse names the type in some messages
        return self.describe()


class Integer(Bounded[int]):
    """A whole number from ``least`` to ``most`` (a multiple of ``multiple_of``: whole pages, whole points);
    ``unit`` names what it counts in the description."""

    def __init__(self, least: int, most: int, unit: str = "", multiple_of: int = 1) -> None:
        self.least, self.most, self.unit, self.multiple_of = least, most, unit, multiple_of

    def describe(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        what = "a whole number" if self.multiple_of == 1 else f"a multiple of {self.multiple_of:,}"
        return f"{what} from {self.least:,} to {self.most:,}{unit}"

    def parse(self, text: str) -> int:
        if re.fullmatch(r"\s*[-+]?\d+\s*", text) is None:
            raise self.fail(text)
        value = int(text)
        if not self.least <= value <= self.most or value % self.multiple_of:
            raise self.fail(text)
        return value

    def bad_examples(self) -> list[str]:
        odd = [str(self.least + 1)] if self.multiple_of > 1 else []
        return ["", "abc", "1.5", str(self.least - 1), str(self.most + 1), "99999999999999999999999"] + odd

    def good_examples(self) -> list[str]:
        return [str(self.least), str(self.most)]


class Size(Bounded[int]):
    """Bytes, with binary units (``4096``, ``64K``, ``256M``, ``1GiB``), from ``least`` to ``most`` (a
    multiple of ``multiple_of``: whole pages for O_DIRECT)."""

    def __init__(self, least: int, most: int, multiple_of: int = 1) -> None:
        self.least, self.most, self.multiple_of = least, most, multiple_of

    def describe(self) -> str:
        whole = f", a multiple of {describe_size(self.multiple_of)}" if self.multiple_of > 1 else ""
        return (f"a size from {describe_size(self.least)} to {describe_size(self.most)}{whole} "
                "(bytes, or with K/M/G/T such as 64M)")

    def parse(self, text: str) -> int:
        try:
            value = parse_size(text)
        except ValueError:
            raise self.fail(text) from None
        if not self.least <= value <= self.most or value % self.multiple_of:
            raise self.fail(text)
        return value

    def bad_examples(self) -> list[str]:
        odd = [str(self.least + 1)] if self.multiple_of > 1 else []
        return ["", "abc", "-1", "4X", "1.5M", str(self.most + 1)] + ([str(self.least - 1)] if self.least > 0 else []) + odd

    def good_examples(self) -> list[str]:
        return [str(self.least), str(self.most)]


class Real(Bounded[float]):
    """A finite number from ``least`` to ``most`` (``above``: strictly above ``least``)."""

    def __init__(self, least: float, most: float, unit: str = "", above: bool = False) -> None:
        self.least, self.most, self.unit, self.above = least, most, unit, above

    def describe(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        low = f"above {self.least:g}" if self.above else f"from {self.least:g}"
        return f"a number {low} to {self.most:g}{unit}"

    def parse(self, text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise self.fail(text) from None
        if not math.isfinite(value) or value > self.most or value < self.least or (self.above and value == self.least):
            raise self.fail(text)
        return value

    def bad_examples(self) -> list[str]:
        return ["", "abc", "nan", "inf", f"{self.least - 1:g}", f"{self.most * 2 + 1:g}"] + (
            [f"{self.least:g}"] if self.above else [])

    def good_examples(self) -> list[str]:
        return [f"{self.most:g}"] + ([] if self.above else [f"{self.least:g}"])


class Items(Bounded[list]):
    """A comma-separated list of ``item`` values (``1,4,16``, ``4K,1M``), at least one."""

    def __init__(self, item: Bounded[Any], most_items: int = 64) -> None:
        self.item, self.least, self.most, self.most_items = item, item.least, item.most, most_items

    def describe(self) -> str:
        return f"a comma-separated list of up to {self.most_items} values, each {self.item.describe()}"

    def parse(self, text: str) -> list[Any]:
        words = [word for word in text.split(",")]
        if not text.strip() or len(words) > self.most_items or any(not w.strip() for w in words):
            raise self.fail(text)
        try:
            return [self.item.parse(word) for word in words]
        except argparse.ArgumentTypeError:
            raise self.fail(text) from None

    def bad_examples(self) -> list[str]:
        return ["", ",", "1,,2"] + [f"{word},{word}" for word in self.item.bad_examples() if word]

    def good_examples(self) -> list[str]:
        return [",".join(self.item.good_examples())] if self.item.good_examples() else []


class Name(Bounded[str]):
    """A name (a field, a label): letters, digits, ``_``, ``-`` and ``.``, 1 to ``most`` characters."""

    least = 1

    def __init__(self, most: int = 64) -> None:
        self.most = most

    def describe(self) -> str:
        return f"a name of 1 to {self.most} letters, digits, '_', '-' or '.'"

    def parse(self, text: str) -> str:
        if re.fullmatch(r"[A-Za-z0-9_.-]{1,%d}" % self.most, text) is None:
            raise self.fail(text)
        return text

    def bad_examples(self) -> list[str]:
        return ["", "a/b", "bad name!", "x" * (self.most + 1)]

    def good_examples(self) -> list[str]:
        return ["particles", "velocity_2"]


class Host(Bounded[str]):
    """An address to listen on: an IPv4 or IPv6 address, or a host name (labels of letters, digits and '-')."""

    least = most = None

    def describe(self) -> str:
        return "an IP address such as 127.0.0.1 or ::1, or a host name such as localhost"

    def parse(self, text: str) -> str:
        try:
            return str(ipaddress.ip_address(text))
        except ValueError:
            pass
        label = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
        # Digits and dots only: an IPv4 address ipaddress refused, not a name.
        if len(text) > 253 or re.fullmatch(r"[0-9.]+", text) or re.fullmatch(rf"{label}(\.{label})*", text) is None:
            raise self.fail(text)
        return text

    def bad_examples(self) -> list[str]:
        return ["", "300.1.2.3", "host name", "-bad", "a..b", "http://x"]

    def good_examples(self) -> list[str]:
        return ["127.0.0.1", "0.0.0.0", "::1", "localhost", "node-7.cluster"]


class Word(Bounded[str]):
    """One of a fixed set of words (an item of a list such as ``--methods pread,direct``)."""

    least = most = None

    def __init__(self, words: tuple[str, ...]) -> None:
        self.words = tuple(words)

    def describe(self) -> str:
        return f"one of {', '.join(self.words)}"

    def parse(self, text: str) -> str:
        if text not in self.words:
            raise self.fail(text)
        return text

    def bad_examples(self) -> list[str]:
        return ["", "bogus"]

    def good_examples(self) -> list[str]:
        return list(self.words[:2])


class Chain(Bounded[Any]):
    """A codec chain (docs/codecs/): ``none``, one codec (``zstd``, ``lz4(level=9)``) or filters then one
    codec joined by ``|`` (``shuffle|zstd``, ``split|bitshuffle|lz4``), checked against headrace's stages
    as it is parsed (headrace.codecs.parse): an unknown stage is refused with the stages there are. The
    text is kept as given, since the field's dtype completes it where it is written. ``auto``: also the
    word ``auto``. ``per_field``: also ``FIELD=CHAIN``, parsed to ``(field, chain)``; a chain alone is
    then ``(None, chain)``."""

    least = most = None
    _FIELD = re.compile(r"([A-Za-z0-9_.-]{1,64})=(.*)", re.DOTALL)

    def __init__(self, auto: bool = False, per_field: bool = False, auto_instead: str = "") -> None:
        self.auto, self.per_field, self.auto_instead = auto, per_field, auto_instead

    def describe(self) -> str:
        words = "none, " + ("auto, " if self.auto else "") + (
            "a codec or a chain of filters then one codec joined by | (zstd, shuffle|zstd, split|bitshuffle|lz4(level=9))")
        return words + (", alone (every field) or as FIELD=CHAIN" if self.per_field else "")

    def parse(self, text: str) -> Any:
        chain, field = text.strip(), None
        if self.per_field:
            named = self._FIELD.fullmatch(chain)
            if named is not None:
                field, chain = named.group(1), named.group(2).strip()
        if not chain or "\0" in chain:
            raise self.fail(text)
        if chain == "auto" and not self.auto and self.auto_instead:
            raise argparse.ArgumentTypeError(f"{text!r}: auto is not a chain; {self.auto_instead}")
        if not (self.auto and chain == "auto"):
            try:
                _ext.parse_chain(chain, "", 1, 0)  # no field yet: its checks come where it is written
            except ValueError as error:  # UsageError: names the stage, or lists the stages for an unknown one
                raise argparse.ArgumentTypeError(" ".join(str(error).split())) from None
        return (field, chain) if self.per_field else chain

    def bad_examples(self) -> list[str]:
        return ["", "bogus", "zstd|shuffle", "shuffle", "zstd(level=99)", "lz4|zstd"] + (["=zstd"] if self.per_field else [])

    def good_examples(self) -> list[str]:
        return ["none", "zstd", "shuffle|zstd", "split|bitshuffle|lz4(level=9)"] + (["auto"] if self.auto else []) + (
            ["density=delta|shuffle|zstd"] if self.per_field else [])


class Device(Bounded[Any]):
    """``cpu`` or a GPU number (``0``, ``1``, ...)."""

    least, most = 0, GPU_ORDINALS

    def describe(self) -> str:
        return "cpu or a GPU number such as 0"

    def parse(self, text: str) -> int | str:
        word = text.strip().lower()  # device_ordinal: the Python API's rule, so both take the same words
        try:
            ordinal = device_ordinal("cpu" if word == "host" else word)
        except _ext.UsageError:
            raise self.fail(text) from None
        if ordinal is not None and ordinal > GPU_ORDINALS:
            raise self.fail(text)
        return "cpu" if ordinal is None else ordinal

    def bad_examples(self) -> list[str]:
        return ["", "gpu", "-1", "abc", str(GPU_ORDINALS + 1)]

    def good_examples(self) -> list[str]:
        return ["cpu", "0", "cuda:1"]


class Path(Bounded[str]):
    """A path on the command line (a file or folder; whether it exists is the command's to check)."""

    least = most = None

    def describe(self) -> str:
        return "a path"

    def parse(self, text: str) -> str:
        if not text or "\0" in text:
            raise self.fail(text)
        return text

    def bad_examples(self) -> list[str]:
        return [""]

    def good_examples(self) -> list[str]:
        return ["out.csv", "/tmp/x"]


class OutputFile(Path):
    """A file a command writes (through ``NAME.partial`` and a rename), ending in one of ``suffixes`` if
    any are given. Checked as it is parsed, so that a place that cannot take it is a usage error before
    the work, not a lost result after it: not a folder, in a folder that exists and takes new files."""

    def __init__(self, suffixes: tuple[str, ...] = ()) -> None:
        self.suffixes = tuple(suffixes)

    def describe(self) -> str:
        ending = f" ending in {' or '.join(self.suffixes)}" if self.suffixes else ""
        return f"a file{ending} in an existing folder"

    def parse(self, text: str) -> str:
        path = pathlib.Path(super().parse(text))
        if self.suffixes and path.suffix.lower() not in self.suffixes:
            raise self.fail(text)
        if text.endswith(os.sep) or path.is_dir():
            raise argparse.ArgumentTypeError(f"{text} is a folder: expected {self.describe()}")
        folder = path.parent
        if not folder.is_dir():
            raise argparse.ArgumentTypeError(f"{text}: {folder} is not an existing folder")
        try:  # the one sure test that the folder takes new files (root passes access(), a read-only mount does not)
            with tempfile.TemporaryFile(dir=folder):
                pass
        except OSError as error:
            raise argparse.ArgumentTypeError(f"{text}: cannot write in {folder} ({error.strerror})") from None
        return text

    def bad_examples(self) -> list[str]:
        return ["", tempfile.gettempdir(), "/nonexistent-folder/out" + (self.suffixes[0] if self.suffixes else ".csv")] + (
            ["out.bogus"] if self.suffixes else [])

    def good_examples(self) -> list[str]:
        return [os.path.join(tempfile.gettempdir(), "out" + (self.suffixes[0] if self.suffixes else ".csv"))]


class ImageFile(OutputFile):
    """A figure matplotlib draws, in the format its ending names (``.png``, ``.pdf``, ``.svg``, ...); the
    endings are asked of matplotlib when first needed, since importing it takes half a second."""

    def __init__(self) -> None:  # no fixed endings: see suffixes
        self._suffixes: tuple[str, ...] | None = None

    @property
    def suffixes(self) -> tuple[str, ...]:  # type: ignore[override]  # read-only here: asked of matplotlib
        if self._suffixes is None:
            from matplotlib.backend_bases import FigureCanvasBase  # heavy: loaded only when an image is named

            self._suffixes = tuple(sorted(f".{name}" for name in FigureCanvasBase.get_supported_filetypes()))
        return self._suffixes


def choose_device(device: int | str | None, instead: str = "host memory instead") -> int | str:
    """A command's --device (parsed by :class:`Device`): none given, GPU 0 when there is one, else the
    CPU; a GPU asked for on a machine without one, the CPU too. Either fallback is said once on stderr
    with ``instead``, never silent; ``--device cpu`` asks for the CPU and says nothing."""
    if device == "cpu":
        return "cpu"
    count = _ext.gpu_count()
    wanted = 0 if device is None else int(device)
    if wanted < count:
        return wanted
    reason = _ext.gpu_unavailable_reason() or f"{count} GPU{'s' if count != 1 else ''} here"
    missing = "no GPU" if device is None else f"no GPU {wanted}"
    print(f"headrace: {missing} ({reason}): {instead} (--device cpu asks for the CPU and silences this)",
          file=sys.stderr)
    return "cpu"


def particle_device(device: int | str | None, doing: str) -> int | str:
    """The GPU ordinal or "cpu" of --device where particles are drawn; without one, GPU 0 when there is
    one, else the CPU reference renderer, said once (``doing``: "drawing with", "measuring", ...)."""
    return choose_device(device, f"{doing} the CPU reference renderer")


def add_budget_argument(parser: argparse.ArgumentParser, help: str, default: float | None = None) -> None:
    """``--budget SECONDS``: long work stops starting new steps once the budget is spent. The step under
    way finishes and at least one step always runs, so a run makes progress whatever the budget."""
    parser.add_argument("--budget", type=Real(0, MOST_BUDGET_SECONDS, "seconds", above=True), default=default, help=help)


class Budget:
    """Seconds from now, or none (``seconds=None``: never spent)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.started = time.monotonic()

    def spent(self, steps_done: int) -> bool:
        """True once the budget is over and a step was done: the caller starts no new one."""
        return self.seconds is not None and steps_done > 0 and time.monotonic() - self.started > self.seconds

    def said(self, done: int, total: int, what: str) -> str:
        return f"budget of {self.seconds:g} s spent: {done} of {total} {what}"


def cache_help(default: str, measured: str) -> str:
    """The help of a --cache option: what each state does (and costs)."""
    return (f"page cache state of {measured}: cold, this file's pages evicted before each (no privileges needed, "
            "nothing else on the machine touched); hot, the file read once before; drop-all, the whole machine's "
            f"page cache dropped before each (root only: every other process loses its cache) (default {default})")


def cache_said(cache: str) -> str:
    """What a cache state did, for the output."""
    return {"cold": "cold: this file's pages evicted before each measurement",
            "hot": "hot: the file in the page cache",
            "drop-all": "drop-all: the whole machine's page cache dropped before each measurement"}[cache]


def expect_cache_state(cache: str, paths: list[str]) -> None:
    """drop-all needs root: tried once before the work, so that it fails as a usage error, not in every row."""
    if cache == "drop-all":
        drop_page_cache(paths, everything=True)


class _Formatter(argparse.HelpFormatter):
    """Appends each option's range (from its type) to its help."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if isinstance(action.type, Bounded) and action.type.describe() not in text:
            text = f"{text}; " if text else ""
            text += action.type.describe()
        return text.replace("%", "%%") if "%(" not in text else text


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2) and option ranges in the help."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        formatter = kwargs.get("formatter_class", _Formatter)
        if not issubclass(formatter, _Formatter):  # a command's own layout (a raw description) keeps the ranges too
            formatter = type(formatter.__name__, (_Formatter, formatter), {})
        kwargs["formatter_class"] = formatter
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> Any:  # type: ignore[override]
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")
