"""Options and reporting shared by the commands that write containers (``convert``, ``generate``)."""

from __future__ import annotations

import argparse
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from headrace.cli._arguments import parse_size

__all__ = ["add_writer_arguments", "writer_options", "container_summary", "print_summary",
           "terminate_as_exit"]

def add_writer_arguments(parser: argparse.ArgumentParser) -> None:
    """The container-writing options shared by ``convert`` and ``generate``, and ``--json``."""
    group = parser.add_argument_group("container")
    group.add_argument("--chunk-size", type=parse_size, metavar="BYTES",
                       help="chunk size: bytes, or with K/M/G (binary) as in 4M (default: the writer's, 4 MiB; "
                            "64 KiB, the most it takes, for gdeflate)")
    group.add_argument("--codec", choices=("none", "lz4", "zstd", "gdeflate"), default="none",
                       help="chunk codec (default: none); gdeflate writes format 1.1 and needs nvCOMP's CPU library")
    group.add_argument("--codec-level", type=int, help="codec level (default: the codec's)")
    parser.add_argument("--json", action="store_true", help="print a JSON summary")


def writer_options(args: argparse.Namespace) -> dict[str, object]:
    """``--chunk-size``, ``--codec``, ``--codec-level`` as keyword arguments of convert/generate."""
    return {"chunk_size_bytes": args.chunk_size, "codec": args.codec, "codec_level": args.codec_level}


def container_summary(path: Path, seconds: float, **extra: object) -> dict[str, object]:
    """What a written container holds, read back from its index, plus the time it took."""
    import headrace

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
    from headrace.cli._output import console, human_bytes, print_json

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
