"""``headrace stream FILE``: plays every frame through the request queue into GPU (or host) memory and
reports throughput (disk rate, delivered rate, compression ratio) and where the time went."""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import time

import headrace
from headrace.cli._arguments import choose_device
from headrace.cli._options import add_option_arguments, given_options
from headrace.cli._output import console, human_bytes, print_json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("stream", help="stream every frame into GPU or host memory", description=__doc__)
    parser.add_argument("file")
    parser.add_argument("--fields", help="comma-separated fields (default: all)")
    parser.add_argument("--device", default=None, help="GPU ordinal, or cpu (default: 0 when a GPU is there, else cpu)")
    parser.add_argument("--prefetch", type=int, default=3, help="frames in flight (2: double buffering, 3: triple)")
    parser.add_argument("--loop", type=int, default=1, help="play the frames this many times")
    parser.add_argument("--stats", action="store_true", help="print per-frame statistics")
    parser.add_argument("--csv", metavar="OUT.csv", help="write per-frame statistics as CSV")
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_option_arguments(parser)
    parser.set_defaults(func=run)


def summarize(history: list[dict], seconds: float, queue_stats: object) -> dict:
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


def run(args: argparse.Namespace) -> int:
    ds = headrace.open(args.file)
    device = choose_device(args.device)
    fields = args.fields.split(",") if args.fields else None
    # Options not given keep their defaults, overridden by HEADRACE_<NAME> (docs/settings.md).
    options = headrace.queue_options(**given_options(args))
    stream = ds.stream(fields, device=device, prefetch=args.prefetch, loop=args.loop, options=options)
    started = time.perf_counter()
    for frame in stream:
        if device == "cpu":
            frame.release()
        else:
            frame.wait()  # a consumer that only needs the bytes in place
            frame.release()
    seconds = time.perf_counter() - started
    stats = stream.stats()
    described = stream.describe()
    stream.close()
    summary = summarize(stats["frames"], seconds, stats["queue"])
    summary.update(file=ds.path, device=str(device), configuration=described)
    if args.csv:
        partial = f"{args.csv}.partial"
        with open(partial, "w", newline="") as out:
            writer = csv.DictWriter(out, fieldnames=list(stats["frames"][0]) if stats["frames"] else ["frame"])
            writer.writeheader()
            writer.writerows(stats["frames"])
        os.replace(partial, args.csv)
    if args.json:
        print_json({**summary, "per_frame": stats["frames"] if args.stats else None})
        return 0
    console.print(f"{ds.path}: {summary['frames']} frames to {'GPU ' + str(device) if device != 'cpu' else 'host memory'} "
                  f"in {seconds:.3f} s ({described})")
    console.print(f"  stored {human_bytes(summary['stored_bytes'])} at [bold]{summary['disk_gbps']:.3f} GB/s[/], delivered "
                  f"{human_bytes(summary['raw_bytes'])} at [bold]{summary['delivered_gbps']:.3f} GB/s[/] "
                  f"(compression ratio {summary['compression_ratio']:.2f}); from the page cache "
                  f"{human_bytes(summary['bytes_from_cache'])}, from the disk {human_bytes(summary['bytes_from_disk'])}")
    if args.stats:
        console.print(f"  consumer wait per frame: mean {summary['consumer_wait_s']['mean'] * 1e3:.2f} ms, "
                      f"max {summary['consumer_wait_s']['max'] * 1e3:.2f} ms; ready after submit: mean "
                      f"{summary['ready_s']['mean'] * 1e3:.2f} ms")
        console.print(f"  per frame, summed over its reads: queue wait {summary['queue_wait_s_per_frame']['mean'] * 1e3:.2f} ms, "
                      f"I/O {summary['io_s_per_frame']['mean'] * 1e3:.2f} ms, read done to in place "
                      f"{summary['transfer_s_per_frame']['mean'] * 1e3:.2f} ms (H2D "
                      f"{summary['h2d_s_per_frame']['mean'] * 1e3:.2f} ms, decode "
                      f"{summary['decode_s_per_frame']['mean'] * 1e3:.2f} ms)")
        console.print(f"  staging full {summary['staging_waits']} times; {summary['backend_submits']} backend submits; "
                      f"reads in flight mean {summary['reads_in_flight']['mean']:.1f}, max {summary['reads_in_flight']['max']}")
    return 0
