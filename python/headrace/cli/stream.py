"""``headrace stream FILE``: plays every frame through the request queue into GPU (or host) memory and
reports throughput (disk rate, delivered rate, compression ratio) and where the time went."""

from __future__ import annotations

import argparse
import statistics
import time

import headrace
from headrace._ext import QueueStats
from headrace.bench.harness import write_rows
from headrace.cli._arguments import Device, Integer, Items, Name, OutputFile, choose_device
from headrace.cli._budget import Budget, add_budget_argument
from headrace.cli._arguments import Path as PathArgument
from headrace.cli._options import add_option_arguments, given_options
from headrace.cli._output import byte_progress, console, human_bytes, print_json
from headrace.errors import UsageError

MOST_FRAMES_PLAYED = 1_000_000  # frames x --loop: the play order is a list of them


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("stream", help="stream every frame into GPU or host memory", description=__doc__)
    parser.add_argument("file", type=PathArgument(), help="a container")
    parser.add_argument("--fields", type=Items(Name()), help="the fields to stream, comma-separated (default: all)")
    parser.add_argument("--device", type=Device(), default=None,
                        help="where the frames go: cpu is host memory (default: GPU 0 when there is one, else host "
                             "memory, said once)")
    parser.add_argument("--prefetch", type=Integer(1, 64, "frames"), default=3,
                        help="frames in flight, each holding a slot of buffers (2: double buffering, 3: triple, the "
                             "default, as Dataset.stream's; never more slots than frames to play)")
    parser.add_argument("--loop", type=Integer(1, 10_000), default=1,
                        help=f"play the frames this many times (frames x loop at most {MOST_FRAMES_PLAYED:,})")
    add_budget_argument(parser, "stop after this many seconds and report the frames played so far")
    parser.add_argument("--stats", action="store_true", help="print per-frame statistics")
    parser.add_argument("--csv", type=OutputFile(), metavar="OUT.csv", help="write per-frame statistics as CSV")
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_option_arguments(parser)
    parser.set_defaults(func=run)


def summarize(history: list[dict], seconds: float, queue_stats: QueueStats) -> dict:
    stored = sum(f["stored_bytes"] for f in history)
    raw = sum(f["raw_bytes"] for f in history)

    def spread(key: str) -> dict:
        values = [f[key] for f in history] or [0.0]
        return {"mean": statistics.fmean(values), "max": max(values)}

    return {
        "frames": len(history),
        "seconds": seconds,
        "stored_bytes": stored,
        "raw_bytes": raw,
        "compression_ratio": raw / stored if stored else 1.0,
        "disk_gbps": stored / seconds / 1e9 if seconds else 0.0,
        "delivered_gbps": raw / seconds / 1e9 if seconds else 0.0,
        "consumer_wait_s": spread("consumer_wait_s"),
        "ready_s": spread("ready_s"),
        # Each of these is a sum over the frame's reads, which run concurrently: a sum can exceed the
        # frame's own time by up to the number of reads in flight.
        "reads_per_frame": spread("requests"),
        "io_s_per_frame": spread("io_s"),
        "queue_wait_s_per_frame": spread("queue_wait_s"),
        "transfer_s_per_frame": spread("transfer_s"),
        "h2d_s_per_frame": spread("h2d_s"),
        "decode_s_per_frame": spread("decode_s"),
        "bytes_from_cache": sum(f["bytes_from_cache"] for f in history),
        "bytes_from_disk": sum(f["bytes_from_disk"] for f in history),
        "staging_waits": queue_stats.staging_waits,
        "backend_submits": queue_stats.backend_submits,
        "reads_in_flight": {"mean": queue_stats.mean_reads_in_flight, "max": queue_stats.max_reads_in_flight},
    }


def _stored_bytes(ds: headrace.Dataset, fields: list[str]) -> int:
    """The stored bytes of these fields over every frame: what one pass reads."""
    import numpy as np

    table = ds.container.chunk_table()
    mask = np.isin(table["field"], [ds.container.field_index(name) for name in fields])
    return int(table["stored_size"][mask].sum())


def run(args: argparse.Namespace) -> int:
    ds = headrace.open(args.file)
    played = len(ds.frames) * args.loop
    if played > MOST_FRAMES_PLAYED:
        raise UsageError(f"--loop {args.loop}: {len(ds.frames):,} frames x {args.loop} plays {played:,} frames, "
                         f"more than {MOST_FRAMES_PLAYED:,}")
    device = choose_device(args.device)
    fields = args.fields or [f.name for f in ds.fields]
    for name in fields:
        ds.field(name)  # a usage error naming the fields there are
    # Options not given keep their defaults, overridden by HEADRACE_<NAME> (docs/settings.md).
    options = headrace.queue_options(**given_options(args))
    prefetch = min(args.prefetch, played)  # a slot per frame in flight: one that no frame fills is never allocated
    total = _stored_bytes(ds, fields) * args.loop
    stream = ds.stream(fields, device=device, prefetch=prefetch, loop=args.loop, options=options)
    stopped = False
    try:
        started, budget = time.perf_counter(), Budget(args.budget)
        with byte_progress(f"streaming {played} frames", total, enabled=not args.json) as update:
            done = 0
            for frame in stream:
                if device != "cpu":
                    frame.wait()  # a consumer that only needs the bytes in place
                frame.release()
                done += stream.history[-1].stored_bytes
                update(done)
                if budget.spent(len(stream.history)):
                    stopped = True
                    break
        seconds = time.perf_counter() - started
        stats = stream.stats()
        described = stream.describe()
    finally:
        stream.close()
    summary = summarize(stats["frames"], seconds, stats["queue"])
    summary.update(file=ds.path, device=str(device), configuration=described, frames_asked=played,
                   budget_spent=stopped)
    if args.csv:
        write_rows(args.csv, stats["frames"])
    if args.json:
        print_json({**summary, "per_frame": stats["frames"] if args.stats else None})
        return 0
    where = f"GPU {device}" if device != "cpu" else "host memory"
    if stopped:
        console.print(budget.said(summary["frames"], played, "frames played"))
    console.print(f"{ds.path}: {summary['frames']} frames to {where} in {seconds:.3f} s ({described})")
    console.print(f"  stored {human_bytes(summary['stored_bytes'])} at [bold]{summary['disk_gbps']:.3f} GB/s[/], delivered "
                  f"{human_bytes(summary['raw_bytes'])} at [bold]{summary['delivered_gbps']:.3f} GB/s[/] "
                  f"(compression ratio {summary['compression_ratio']:.2f}); from the page cache "
                  f"{human_bytes(summary['bytes_from_cache'])}, from the disk {human_bytes(summary['bytes_from_disk'])}")
    if args.stats:
        console.print(f"  consumer wait per frame: mean {summary['consumer_wait_s']['mean'] * 1e3:.2f} ms, "
                      f"max {summary['consumer_wait_s']['max'] * 1e3:.2f} ms; ready after submit: mean "
                      f"{summary['ready_s']['mean'] * 1e3:.2f} ms")
        console.print(f"  per frame, summed over its {summary['reads_per_frame']['mean']:.0f} concurrent reads (so a sum "
                      f"may exceed the frame's time): queue wait {summary['queue_wait_s_per_frame']['mean'] * 1e3:.2f} ms, "
                      f"I/O {summary['io_s_per_frame']['mean'] * 1e3:.2f} ms, read done to in place "
                      f"{summary['transfer_s_per_frame']['mean'] * 1e3:.2f} ms (H2D "
                      f"{summary['h2d_s_per_frame']['mean'] * 1e3:.2f} ms, decode "
                      f"{summary['decode_s_per_frame']['mean'] * 1e3:.2f} ms)")
        console.print(f"  staging full {summary['staging_waits']} times; {summary['backend_submits']} backend submits; "
                      f"reads in flight mean {summary['reads_in_flight']['mean']:.1f}, max {summary['reads_in_flight']['max']}")
    return 0
