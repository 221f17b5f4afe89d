"""Re-writes a container with its chunks stored through other codec chains (compressed, filtered or
plain), one chain for every field or one per field, named or chosen by measuring (docs/codecs/).

    headrace compress IN.hrc OUT.hrc

``--codec CHAIN`` stores every field with one chain (``shuffle|zstd``, ``split|bitshuffle|lz4``,
``delta|shuffle|deflate``, ``snappy``, ``none``); ``--codec FIELD=CHAIN`` (repeated) names a field's own,
and the fields not named take the chain given alone, else none. ``--auto`` chooses a chain for every field
not named (headrace.codecs.choose): the candidates are tried on ``--sample-chunks`` chunks spread over the
whole file (the first frame's first chunk, the middle, the last frame's last) and one is picked by
``--objective``: delivery (default: the least time to put a frame's bytes in GPU memory from a disk of
``--disk-rate``, measured by a short probe of OUT's folder when not given), smallest or fastest. The
choices and the measurements they were made by are stored in the attribute ``codec_choice``
(``headrace inspect`` shows them). A lossy chain (bitcomp_lossy) is never chosen, only written where
--codec names it.

Frames are copied with their times and bounding boxes, every attribute with them, a field's values
read a piece at a time (whole chunks, at most 64 MiB) in stored order: memory stays bounded whatever the
frames hold. Chunks hold --chunk-size bytes (default: as many as the input's, at most what the chains'
codecs take). An existing OUT.hrc is replaced only with --force; a failed or interrupted run leaves no
output file.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.markup import escape

import headrace
from headrace import codecs
from headrace.cli._output import byte_progress, console, human_bytes, print_json
from headrace.cli._shared import Chain, Device, Integer, Path as PathArgument, Size, choose_device
from headrace.cli._writer_options import (
    CHUNK_BYTES,
    add_output_argument,
    check_chunk_bytes,
    chunk_limit,
    interrupted,
    refuse_existing,
    terminate_as_exit,
)
from headrace.codecs import OBJECTIVES
from headrace.errors import UnavailableError, UnknownNameError, UsageError
from headrace.writer import DEFAULT_CHUNK_BYTES, AutoOptions

__all__ = ["register", "run", "sample_chunks", "PIECE_BYTES"]

DEFAULT_SAMPLE_CHUNKS = 4
PIECE_BYTES = 64 << 20  # the most raw bytes of a field read at once (whole input chunks; one chunk when larger)
DISK_RATE = Size(1 << 20, 1 << 40)  # bytes per second
_AUTO_ONLY = ("objective", "disk_rate", "allow_gpu_only", "device", "sample_chunks")


def register(subparsers: argparse._SubParsersAction, summary: str) -> None:
    parser = subparsers.add_parser("compress", help=summary,
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", metavar="IN.hrc", type=PathArgument(), help="the container to re-write")
    add_output_argument(parser)
    chains = parser.add_argument_group("chains")
    chains.add_argument("--codec", action="append", metavar="[FIELD=]CHAIN",
                        type=Chain(per_field=True, auto_instead="--auto chooses (with --codec FIELD=CHAIN for the "
                                                                "fields it should not)"),
                        help="the chain of every field, or with FIELD= of one field (repeat for more); fields not named "
                             "take the chain given alone, else none (or --auto's choice). A lossy chain "
                             "(split|bitcomp_lossy(error=E)) is written only where named here")
    chains.add_argument("--chunk-size", type=CHUNK_BYTES, metavar="BYTES",
                        help="bytes a chunk holds, rounded down to whole elements (default: the input's chunk size, at "
                             "most 16 MiB compressed and 64 KiB for gdeflate in one stream a chunk: alone, or block=0)")
    auto = parser.add_argument_group("auto (the options after --auto need it)")
    auto.add_argument("--auto", action="store_true",
                      help="choose the chain of every field --codec FIELD= does not name, from sample chunks spread "
                           "over the file; stored in the attribute codec_choice")
    auto.add_argument("--objective", choices=OBJECTIVES,
                      help="delivery (default): the least time to a frame in GPU memory from the disk, reading and "
                           "decoding overlapped; smallest: the least stored bytes; fastest: the fastest decoding of "
                           "the chains that shrink the data")
    auto.add_argument("--disk-rate", type=DISK_RATE, metavar="RATE",
                      help="the disk's read rate in bytes per second for --objective delivery, such as 2G (default: "
                           "measured by a short probe of OUT's folder, headrace probe's O_DIRECT reads of 256 MiB)")
    auto.add_argument("--allow-gpu-only", action="store_true",
                      help="let ans and cascaded be chosen: only a GPU encodes and decodes them (nvCOMP has no CPU "
                           "library for them), so the file then reads only on a machine with a GPU")
    auto.add_argument("--device", type=Device(),
                      help="where decoding is timed: a GPU number, or cpu for the CPU's cores (default: GPU 0 when "
                           "there is one, else the CPU, said once)")
    auto.add_argument("--sample-chunks", type=Integer(1, 64, "chunks"), metavar="K",
                      help=f"chunks each field's candidates are tried on, spread over the frames (default "
                           f"{DEFAULT_SAMPLE_CHUNKS})")
    parser.add_argument("--json", action="store_true", help="print a JSON summary, every trial of --auto included")
    parser.set_defaults(func=run)


@dataclass
class _FieldPlan:
    """How one field is written: its chain (as named or chosen), and where it came from."""

    name: str
    dtype: str
    components: int
    chain: str
    source: str  # "given" (--codec), "auto" (--auto), "default" (neither: none)
    error_bound: float | None = None
    choice: Any = None  # headrace.codecs.Choice for "auto"


def _check_options(args: argparse.Namespace) -> tuple[dict[str, str], str | None]:
    """The chains --codec names per field, and the one given alone (None if none); usage errors for
    options that contradict each other."""
    named: dict[str, str] = {}
    alone: str | None = None
    for field, chain in args.codec or ():
        if field is None:
            if alone is not None and alone != chain:
                raise UsageError(f"--codec {alone} and --codec {chain}: one chain for every field (name others as "
                                 "--codec FIELD=CHAIN)")
            alone = chain
        elif field in named and named[field] != chain:
            raise UsageError(f"--codec {field}={named[field]} and --codec {field}={chain}: one chain a field")
        else:
            named[field] = chain
    if args.auto:
        if alone is not None:
            raise UsageError(f"--auto and --codec {alone}: --auto chooses the chain of every field --codec does not "
                             "name; name fields with --codec FIELD=CHAIN")
    else:
        stray = ["--" + name.replace("_", "-") for name in _AUTO_ONLY if getattr(args, name) not in (None, False)]
        if stray:
            raise UsageError(f"{', '.join(stray)}: only with --auto")
    return named, alone


def _plans(ds: Any, named: dict[str, str], alone: str | None, auto: bool) -> list[_FieldPlan]:
    """Each field's chain as named (checked against its dtype), "auto" to choose, or none."""
    names = [f.name for f in ds.fields]
    unknown = [name for name in named if name not in names]
    if unknown:
        raise UnknownNameError(f"{ds.path}: --codec {unknown[0]}={named[unknown[0]]}: no field {unknown[0]!r} "
                               f"(fields: {', '.join(names)})")
    fastest = codecs.fastest_axis_points(ds.attributes)
    plans = []
    for f in ds.fields:
        if f.name in named:
            chain, source = named[f.name], "given"
        elif alone is not None and not auto:
            chain, source = alone, "given"
        elif auto:
            chain, source = "auto", "auto"
        else:
            chain, source = "none", "default"
        plan = _FieldPlan(f.name, f.dtype, f.components, chain, source)
        if chain != "auto":
            try:
                info = codecs.parse(chain, f.dtype, f.components, fastest)
            except UsageError as error:
                raise UsageError(f"--codec {chain} for field {f.name!r} ({f.dtype} x {f.components}): {error}") from None
            if info.error_bound is not None and f"type={f.dtype}," not in (info.codec or ""):
                # bitcomp_lossy quantizes float32 or float64 values: any other field's bytes would be read as such
                raise UsageError(f"--codec {chain} for field {f.name!r} ({f.dtype} x {f.components}): a lossy chain "
                                 f"bounds the error of float32 or float64 values, and {info.codec} would read this "
                                 f"field's {f.dtype} bytes as other values")
            plan.error_bound = info.error_bound
        plans.append(plan)
    return plans


def _input_chunk_bytes(ds: Any) -> int:
    """The raw bytes of the input's largest chunk: the chunk size it was written with, as the writer
    rounds it per field (0 when it holds no chunks)."""
    sizes = ds.container.chunk_table()["raw_size"]
    return int(sizes.max()) if len(sizes) else 0


def _chunk_bytes(args: argparse.Namespace, ds: Any, plans: list[_FieldPlan]) -> int:
    """--chunk-size, checked against every chain's codec; else the input's, at most what they take."""
    chains = [p.chain for p in plans if p.chain != "none"]
    if args.chunk_size is not None:
        for chain in chains:
            check_chunk_bytes(chain, args.chunk_size)
        return int(args.chunk_size)
    limits = [limit for limit in (chunk_limit(c) for c in chains) if limit is not None]
    return min([_input_chunk_bytes(ds) or DEFAULT_CHUNK_BYTES, *limits])


def _pieces(ds: Any, frame: int, field: int, element_bytes: int) -> Iterator[tuple[int, int]]:
    """[start, stop) element ranges of a frame's field, whole input chunks of at most PIECE_BYTES raw
    bytes each (one chunk when a chunk is larger)."""
    elements, first, count = ds.container.frame_field(frame, field)
    if elements == 0:
        return
    firsts = [int(v) for v in ds.chunk_columns["first_element"][first:first + count]] + [int(elements)]
    start = 0
    for k in range(1, len(firsts)):
        if firsts[k] > start and (firsts[k] - start) * element_bytes > PIECE_BYTES and firsts[k - 1] > start:
            yield start, firsts[k - 1]
            start = firsts[k - 1]
    yield start, int(elements)


def sample_chunks(ds: Any, field: str, chunk_bytes: int, count: int) -> list[Any]:
    """``count`` chunks of ``field`` as the writer will cut them (``chunk_bytes``), spread evenly over
    every frame's chunks, the first and the last included; each read alone (flat values, stored order)."""
    index = ds.container.field_index(field)
    info = ds.fields[index]
    element_bytes = np.dtype(info.dtype).itemsize * info.components
    per_chunk = max(1, chunk_bytes // element_bytes)
    elements = np.array([ds.container.frame_field(t, index)[0] for t in range(len(ds.frames))], dtype=np.int64)
    chunks = -(-elements // per_chunk)  # chunks per frame
    total = int(chunks.sum())
    if total == 0:
        return []
    picked = sorted({k * (total - 1) // (count - 1) for k in range(count)} if count > 1 else {(total - 1) // 2})
    ends = np.cumsum(chunks)
    sample = []
    for k in picked:
        frame = int(np.searchsorted(ends, k, "right"))
        local = k - int(ends[frame] - chunks[frame])
        start = local * per_chunk
        stop = min(int(elements[frame]), start + per_chunk)
        sample.append(ds.read(frame, field, region=slice(start, stop), stored_order=True).reshape(-1))
    return sample


def _choose(args: argparse.Namespace, ds: Any, plans: list[_FieldPlan], chunk_bytes: int) -> None:
    """--auto: each field's chain chosen from sample chunks spread over the file."""
    waiting = [p for p in plans if p.chain == "auto"]
    if not waiting:
        return
    objective = args.objective or "delivery"
    device = choose_device(args.device, "timing decoding on the CPU instead")
    rate, source = None, ""
    if objective == "delivery":
        if args.disk_rate is not None:
            rate, source = float(args.disk_rate), "given"
        else:
            rate, source = codecs.disk_rate_of(os.path.dirname(os.path.abspath(args.output)))
    fastest = codecs.fastest_axis_points(ds.attributes)
    for plan in waiting:
        sample = sample_chunks(ds, plan.name, chunk_bytes, args.sample_chunks or DEFAULT_SAMPLE_CHUNKS)
        if not sample:  # no values in any frame: nothing to store, nothing to choose by
            plan.chain = "none"
            continue
        plan.choice = codecs.choose(plan.name, sample, dtype=plan.dtype, components=plan.components,
                                    fastest_axis_points=fastest, objective=objective,  # type: ignore[arg-type]
                                    disk_bytes_per_second=rate, disk_rate_source=source,
                                    device=None if device == "cpu" else int(device), gpu_only=args.allow_gpu_only)
        plan.chain = plan.choice.spec


def _write(args: argparse.Namespace, ds: Any, plans: list[_FieldPlan], chunk_bytes: int) -> dict[str, str]:
    """OUT through the writer (a partial file renamed at the end); returns each field's chain as recorded."""
    specs = [headrace.FieldSpec(p.name, p.dtype, p.components) for p in plans]
    choices = {p.name: p.choice.as_dict() for p in plans if p.choice is not None}
    device = args.device if isinstance(args.device, int) else None
    done = 0
    with terminate_as_exit(), byte_progress(f"compressing {Path(ds.path).name}", ds.raw_bytes,
                                            enabled=not args.json) as update, \
            headrace.Writer(args.output, specs, chunk_size_bytes=chunk_bytes, codec={p.name: p.chain for p in plans},
                            auto=AutoOptions(device=device)) as writer:
        for name, value in ds.attributes.items():
            if name != "codec_choice":  # the input's choice describes chains this file no longer holds
                writer.set_attribute(name, value)
        if choices:
            writer.set_attribute("codec_choice", json.dumps(choices))
        for frame in ds.frames:
            box = frame.bbox
            known = any(math.isfinite(v) for corner in box for v in corner)
            handle = writer.add_frame(frame.time, box if known else None)
            for index, plan in enumerate(plans):
                element_bytes = np.dtype(plan.dtype).itemsize * plan.components
                pieces = list(_pieces(ds, frame.index, index, element_bytes))
                if not pieces:  # an empty frame-field stays empty (format 1.2)
                    writer.write(handle, plan.name, np.empty((0, plan.components), plan.dtype))
                for start, stop in pieces:
                    values = ds.read(frame.index, plan.name, region=slice(start, stop), stored_order=True)
                    try:
                        writer.write(handle, plan.name, values)
                    except (UsageError, UnavailableError) as error:
                        raise type(error)(f"{args.output}: field {plan.name!r} through {plan.chain}: {error}") from error
                    done += values.nbytes
                    update(done)
        return dict(writer.chains)


def _field_bytes(ds: Any) -> dict[str, tuple[int, int]]:
    """Per field: (raw bytes, stored bytes) over its chunks."""
    table = ds.container.chunk_table()
    result = {}
    for index, f in enumerate(ds.fields):
        mine = table["field"] == index
        result[f.name] = (int(np.sum(table["raw_size"][mine])), int(np.sum(table["stored_size"][mine])))
    return result


def _summary(args: argparse.Namespace, before: Any, plans: list[_FieldPlan], recorded: dict[str, str],
             chunk_bytes: int, seconds: float) -> dict[str, Any]:
    after = headrace.open(args.output)
    old, new = _field_bytes(before), _field_bytes(after)
    fields = []
    for plan in plans:
        raw, stored_before = old[plan.name]
        _, stored_after = new[plan.name]
        fields.append({
            "name": plan.name, "dtype": plan.dtype, "components": plan.components,
            "chain": recorded.get(plan.name, "none"), "source": plan.source, "error_bound": plan.error_bound,
            "raw_bytes": raw, "stored_bytes_before": stored_before, "stored_bytes_after": stored_after,
            "stored_fraction_before": round(stored_before / raw, 4) if raw else 1.0,
            "stored_fraction": round(stored_after / raw, 4) if raw else 1.0,
            "reasons": plan.choice.describe() if plan.choice is not None else None,
            "choice": plan.choice.as_dict() if plan.choice is not None else None,
        })
    raw = after.raw_bytes
    return {
        "input": before.path, "output": after.path, "version": "%d.%d" % after.container.version,
        "frames": len(after.frames), "chunk_size_bytes": chunk_bytes, "fields": fields,
        "raw_bytes": raw, "stored_bytes_before": before.stored_bytes, "stored_bytes_after": after.stored_bytes,
        "stored_fraction_before": round(before.stored_bytes / raw, 4) if raw else 1.0,
        "stored_fraction": round(after.stored_bytes / raw, 4) if raw else 1.0,
        "file_size_before": before.file_size, "file_size_after": after.file_size, "seconds": round(seconds, 3),
    }


def _print(summary: dict[str, Any]) -> None:
    console.print(f"wrote [bold]{escape(summary['output'])}[/] (format {summary['version']}): {summary['frames']} frames "
                  f"from {escape(summary['input'])}, chunks of {human_bytes(summary['chunk_size_bytes'])}, "
                  f"{summary['seconds']:.2f} s", soft_wrap=True)
    for f in summary["fields"]:
        lossy = "" if f["error_bound"] is None else f"; lossy: error bound {f['error_bound']:g}"
        how = {"given": "named by --codec", "auto": "chosen by --auto", "default": "no --codec"}[f["source"]]
        console.print(f"  {escape(f['name'])}: {escape(f['chain'] or 'none')} ({how}{lossy}): stored "
                      f"{f['stored_fraction_before']:.3f} -> {f['stored_fraction']:.3f} of raw", soft_wrap=True)
        if f["reasons"]:
            refused = f["choice"]["refused"]
            console.print("    " + escape(f["reasons"]) + (f"; {len(refused)} chains could not be tried here "
                                                           "(--json says why)" if refused else ""), soft_wrap=True)
    console.print(f"raw {human_bytes(summary['raw_bytes'])}; stored {human_bytes(summary['stored_bytes_before'])} "
                  f"before, {human_bytes(summary['stored_bytes_after'])} after: stored fraction "
                  f"{summary['stored_fraction_before']:.3f} -> {summary['stored_fraction']:.3f}; "
                  f"{summary['seconds']:.2f} s", soft_wrap=True)


def run(args: argparse.Namespace) -> int:
    named, alone = _check_options(args)
    if Path(args.input).resolve() == Path(args.output).resolve():
        raise UsageError(f"{args.output}: the output would overwrite the input")
    ds = headrace.open(args.input)
    plans = _plans(ds, named, alone, args.auto)
    chunk_bytes = _chunk_bytes(args, ds, plans)
    before = refuse_existing(args.output, args.force)
    started = time.perf_counter()
    try:
        _choose(args, ds, plans, chunk_bytes)
        recorded = _write(args, ds, plans, chunk_bytes)
    except KeyboardInterrupt:
        return interrupted("compress", args.output, before)
    finally:
        ds.close()
    summary = _summary(args, ds, plans, recorded, chunk_bytes, time.perf_counter() - started)
    if args.json:
        print_json(summary)
    else:
        _print(summary)
    return 0
