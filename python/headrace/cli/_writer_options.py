"""Options and reporting shared by the commands that write containers (``convert``, ``generate``)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypedDict

import headrace
from headrace import _ext
from headrace.cli._output import console, human_bytes, print_json
from headrace.cli._shared import Chain, Integer, OutputFile, Size, describe_size
from headrace.codecs import STAGES, gdeflate_in_one_stream
from headrace.errors import UsageError
from headrace.writer import PLAIN_CODECS, Codec

__all__ = ["add_writer_arguments", "add_output_argument", "writer_options", "check_chunk_bytes", "chain_codec",
           "refuse_existing", "interrupted", "container_summary", "print_summary", "terminate_as_exit", "CODEC_LEVELS",
           "CODEC_CHUNK_BYTES", "CHUNK_BYTES", "WriterOptions", "chunk_limit"]

# The levels each plain codec's encoder takes (the codec registry's facts).
CODEC_LEVELS = {name: STAGES[name]["levels"] for name in PLAIN_CODECS[1:]}
# The most raw bytes a compressed chunk holds, by a chain's codec (its last stage), and why: the engine
# decodes chunks of at most 16 MiB on the GPU, a codec's encoder takes at most its largest block in one
# stream (nvCOMP's CPU gdeflate encoder: 64 KiB). "auto" may choose any codec but gdeflate (left out for
# larger chunks).
_GPU_DECODE_MOST = _ext.max_gpu_decode_chunk_bytes
CODEC_CHUNK_BYTES = {**{name: min(_GPU_DECODE_MOST, stage["max_block_bytes"]) for name, stage in STAGES.items()
                        if stage["kind"] == "codec"}, "auto": _GPU_DECODE_MOST}
_CHUNK_LIMIT_REASON = {name: "the most the engine decodes on the GPU" for name in CODEC_CHUNK_BYTES}
_CHUNK_LIMIT_REASON["gdeflate"] = "the most nvCOMP's CPU encoder takes"
# Every chunk starts on a 4 KiB page (docs/format.md), so a smaller chunk only pads the file; above
# 256 MiB a chunk no longer fits the engine's staging ring (256 MiB by default).
CHUNK_BYTES = Size(4 << 10, 256 << 20)


def add_output_argument(parser: argparse.ArgumentParser) -> None:
    """The ``OUT.hrc`` positional and ``--force``."""
    parser.add_argument("output", metavar="OUT.hrc", type=OutputFile(),
                        help="container to write (an existing file is replaced only with --force)")
    parser.add_argument("--force", action="store_true", help="replace OUT.hrc if it exists")


def add_writer_arguments(parser: argparse.ArgumentParser) -> None:
    """The container-writing options shared by ``convert`` and ``generate``, and ``--json``."""
    group = parser.add_argument_group("container")
    group.add_argument("--chunk-size", type=CHUNK_BYTES, metavar="BYTES",
                       help="bytes a chunk holds, rounded down to whole elements (a flow's whole blocks), at least "
                            "one (default 4 MiB; 64 KiB for gdeflate in one stream a chunk (alone, or block=0); at most 16 MiB compressed, "
                            "64 KiB with gdeflate)")
    group.add_argument("--codec", type=Chain(auto=True), default="none", metavar="CHAIN",
                       help="how chunks are stored (default: none): a codec (lz4, zstd, gdeflate, snappy, deflate, ...), "
                            "filters then a codec (shuffle|zstd, split|bitshuffle|lz4(level=9); docs/codecs/), or auto: "
                            "chosen per field from its first data by the delivery time of a short probe of OUT's disk; "
                            "a chain other than lz4, zstd or gdeflate alone writes format 1.3")
    group.add_argument("--codec-level", type=Integer(1, 22), metavar="L",
                       help="compression level: lz4 1 (fast, the default) to 12 (LZ4-HC), zstd 1 to 22 (default 3), "
                            "gdeflate 1 to 12 (default 6); needs --codec lz4, zstd or gdeflate (in a chain, write it in: "
                            "zstd(level=9))")
    parser.add_argument("--json", action="store_true", help="print a JSON summary")


def chain_codec(chain: str) -> str:
    """The codec of a chain as written: its last stage's name (``shuffle|zstd(level=5)`` -> ``zstd``)."""
    return chain.split("|")[-1].split("(")[0].strip()


def chunk_limit(chain: str) -> int | None:
    """The most raw bytes a chunk of ``chain`` holds (None: no limit here). gdeflate's 64 KiB is its CPU
    encoder's for one stream a chunk: in blocks (any chain but gdeflate alone, or ``block=`` other than
    0; docs/codecs/README.md) a chunk holds as much as the engine decodes."""
    last = chain_codec(chain)
    if last == "gdeflate" and not gdeflate_in_one_stream(chain):
        return _GPU_DECODE_MOST
    return CODEC_CHUNK_BYTES.get(last)


def check_chunk_bytes(codec: str, chunk_bytes: int, why: str = "--chunk-size") -> None:
    """A ``UsageError`` when chunks of ``chunk_bytes`` are more than ``codec`` (a chain, by its last stage;
    or ``auto``) takes; ``why`` names the cause."""
    last = chain_codec(codec)
    most = chunk_limit(codec)
    if most is not None and chunk_bytes > most:
        whose = "which" if last == codec.strip() else f"whose codec {last}"
        raise UsageError(f"{why}: chunks of {describe_size(chunk_bytes)} with --codec {codec}, {whose} takes at most "
                         f"{describe_size(most)} a chunk ({_CHUNK_LIMIT_REASON[last] if most != _GPU_DECODE_MOST else _CHUNK_LIMIT_REASON['zstd']})")


class WriterOptions(TypedDict):
    """The keyword arguments of convert/generate that say how the container is written."""

    chunk_size_bytes: int | None
    codec: Codec
    codec_level: int | None


def writer_options(args: argparse.Namespace) -> WriterOptions:
    """``--chunk-size``, ``--codec``, ``--codec-level`` as keyword arguments of convert/generate, checked
    against each other."""
    if args.codec_level is not None:
        if args.codec == "none":
            raise UsageError(f"--codec-level {args.codec_level} needs --codec lz4, zstd or gdeflate")
        if args.codec not in CODEC_LEVELS:
            raise UsageError(f"--codec-level {args.codec_level} goes with --codec lz4, zstd or gdeflate, not {args.codec}: "
                             f"write the level into the chain's codec, e.g. zstd(level={args.codec_level})")
        least, most = CODEC_LEVELS[args.codec]
        if not least <= args.codec_level <= most:
            raise UsageError(f"--codec-level {args.codec_level}: --codec {args.codec} takes levels {least} to {most}")
    if args.chunk_size is not None:
        check_chunk_bytes(args.codec, args.chunk_size)
    return {"chunk_size_bytes": args.chunk_size, "codec": args.codec, "codec_level": args.codec_level}


def refuse_existing(output: str, force: bool) -> os.stat_result | None:
    """The output as it is before writing (None when it does not exist); a ``UsageError`` when it exists
    and ``--force`` was not given."""
    try:
        before = os.stat(output)
    except FileNotFoundError:
        return None
    if not force:
        raise UsageError(f"{output} exists: --force replaces it")
    return before


def interrupted(command: str, output: str, before: os.stat_result | None) -> int:
    """After a Ctrl-C: says what is on disk at ``output`` (written, unchanged or absent), removes a
    partial file left behind, and returns the exit status (130)."""
    partial = Path(output + ".partial")
    partial.unlink(missing_ok=True)  # the writer removes it; an interrupt inside that removal may not have
    try:
        now = os.stat(output)
    except FileNotFoundError:
        state = f"{output} was not written"
    else:
        if before is not None and (now.st_ino, now.st_mtime_ns) == (before.st_ino, before.st_mtime_ns):
            state = f"{output} was not replaced: the earlier file is as it was"
        else:  # the rename comes last, after the index and an fsync: a file there is whole
            state = f"{output} had been written in full"
    print(f"headrace {command}: interrupted; {state}", file=sys.stderr)
    return 130


def container_summary(path: Path, seconds: float, **extra: object) -> dict[str, object]:
    """What a written container holds, read back from its index, plus the time it took."""
    ds = headrace.open(path)
    fields = [
        {"name": f.name, "dtype": f.dtype, "components": f.components,
         "elements": sum(ds.element_count(frame.index, f.name) for frame in ds.frames)}
        for f in ds.fields
    ]
    attributes = {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in ds.attributes.items()}
    return {
        **extra,
        "output": ds.path,
        "frames": len(ds.frames),
        "fields": fields,
        "file_size": ds.file_size,
        "raw_bytes": ds.raw_bytes,
        "stored_bytes": ds.stored_bytes,
        "seconds": round(seconds, 3),
        "attributes": attributes,
    }


def print_summary(summary: dict[str, object], as_json: bool) -> None:
    if as_json:
        print_json(summary)
        return
    fields = ", ".join(f"{f['name']} {f['dtype']}x{f['components']}" for f in summary["fields"])  # type: ignore[attr-defined]
    console.print(f"wrote [bold]{summary['output']}[/]: {summary['frames']} frames of {fields}, "
                  f"{human_bytes(summary['file_size'])} in {summary['seconds']:.2f} s",  # type: ignore[arg-type]
                  soft_wrap=True)


@contextmanager
def terminate_as_exit() -> Iterator[None]:
    """Turn SIGTERM into ``SystemExit(143)`` while writing, so the writer removes its partial file."""
    def on_terminate(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    try:
        previous = signal.signal(signal.SIGTERM, on_terminate)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
