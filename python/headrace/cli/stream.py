"""Plays every frame of a container through the request queue into GPU (or host) memory and reports
throughput (disk rate, delivered rate, compression ratio) and where the time went.

Under MPI (``mpirun -n N headrace stream FILE``) each rank streams its own block of frames on its own GPU
(its local rank's; headrace.distributed), all starting together; rank 0 reports every rank and the job:
its bytes over the slowest rank's time."""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

import headrace
from headrace import distributed
from headrace._ext import QueueStats
from headrace._files import write_rows
from headrace.cli._engine_options import add_option_arguments, given_options
from headrace.cli._output import byte_progress, console, human_bytes, print_json
from headrace.cli._shared import (
    Budget,
    Device,
    Integer,
    Items,
    Name,
    OutputFile,
    Path as PathArgument,
    add_budget_argument,
    choose_device,
)
from headrace.errors import UsageError
from headrace.measurement import cpu_by_stage, process_cpu_seconds

MOST_FRAMES_PLAYED = 1_000_000  # frames x --loop: the play order is a list of them


def register(subparsers: argparse._SubParsersAction, summary: str) -> None:
    parser = subparsers.add_parser("stream", help=summary, description=__doc__)
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


def summarize(history: list[dict], seconds: float, queue_stats: QueueStats, cpu: tuple[float, float] = (0.0, 0.0),
              cpu_stages: dict[str, float] | None = None) -> dict:
    """A stream's numbers; ``cpu``: the process's user and system CPU seconds while it streamed (all its
    threads), reported per GB delivered: what the bytes cost the host (seeds 001 and 004); ``cpu_stages``:
    the same seconds by the engine's stage (:class:`headrace.measurement.CpuByStage`)."""
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
        "cpu_user_s": cpu[0],
        "cpu_system_s": cpu[1],
        "cpu_s_per_gb": (cpu[0] + cpu[1]) / (raw / 1e9) if raw else 0.0,
        "cpu_s_per_gb_by_stage": {stage: spent / (raw / 1e9) if raw else 0.0 for stage, spent in (cpu_stages or {}).items()},
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
        "bytes_held": sum(f["bytes_held"] for f in history),
        "staging_waits": queue_stats.staging_waits,
        "backend_submits": queue_stats.backend_submits,
        "reads_in_flight": {"mean": queue_stats.mean_reads_in_flight, "max": queue_stats.max_reads_in_flight},
    }


def _stored_bytes(ds: headrace.Dataset, fields: list[str], frames: list[int] | None = None) -> int:
    """The stored bytes of these fields over every frame (or these frames): what one pass reads."""
    table = ds.container.chunk_table()
    mask = np.isin(table["field"], [ds.container.field_index(name) for name in fields])
    if frames is not None:
        mask &= np.isin(table["frame"], frames)
    return int(table["stored_size"][mask].sum())


def _sources(summary: dict) -> str:
    """Where the stored bytes came from: memory (the page cache, page-locked pages, the engine's held copies)
    and the disk."""
    held = f" (held by the engine from an earlier read {human_bytes(summary['bytes_held'])})" if summary["bytes_held"] else ""
    return f"from memory {human_bytes(summary['bytes_from_cache'])}{held}, from the disk {human_bytes(summary['bytes_from_disk'])}"


def _report_ranks(args: argparse.Namespace, job: Any, summary: dict, per_frame: list[dict]) -> int:
    """Rank 0 reports every rank's summary and the job's: the bytes of all over the slowest one's time."""
    frames = [f["frame"] for f in per_frame]
    cpus = distributed.placement(int(summary["device"])) if summary["device"] != "cpu" else ""
    everyone = job.gather({**summary, "rank": job.rank, "local_rank": job.local_rank, "frames_played": frames, "cpus": cpus,
                           "per_frame": per_frame if args.stats or args.csv else None})
    if not job.root:
        return 0
    assert everyone is not None
    seconds = max(r["seconds"] for r in everyone)
    stored, raw = sum(r["stored_bytes"] for r in everyone), sum(r["raw_bytes"] for r in everyone)
    job_summary = {"ranks": job.size, "frames": sum(r["frames"] for r in everyone), "seconds": seconds,
                   "stored_bytes": stored, "raw_bytes": raw, "disk_gbps": stored / seconds / 1e9 if seconds else 0.0,
                   "delivered_gbps": raw / seconds / 1e9 if seconds else 0.0,
                   "bytes_from_cache": sum(r["bytes_from_cache"] for r in everyone),
                   "bytes_from_disk": sum(r["bytes_from_disk"] for r in everyone),
                   "bytes_held": sum(r["bytes_held"] for r in everyone),
                   "cpu_s_per_gb": sum(r["cpu_user_s"] + r["cpu_system_s"] for r in everyone) / (raw / 1e9) if raw else 0.0}
    if args.csv:
        write_rows(args.csv, [{**f, "rank": r["rank"]} for r in everyone for f in r["per_frame"]])
    if args.json:
        print_json({"job": job_summary, "per_rank": [{k: v for k, v in r.items() if k != "per_frame" or args.stats}
                                                      for r in everyone]})
        return 0
    where = "host memory" if everyone[0]["device"] == "cpu" else "GPU memory"
    console.print(f"{summary['file']}: {job_summary['frames']} frames to {where} by {job.size} ranks in {seconds:.3f} s: "
                  f"stored {human_bytes(stored)} at [bold]{job_summary['disk_gbps']:.3f} GB/s[/], delivered "
                  f"{human_bytes(raw)} at [bold]{job_summary['delivered_gbps']:.3f} GB/s[/] (the job's bytes over its "
                  f"slowest rank's time); CPU {job_summary['cpu_s_per_gb']:.3f} s a GB (every rank's)")
    for r in everyone:
        place = "host memory" if r["device"] == "cpu" else f"GPU {r['device']}"
        first, last = (r["frames_played"][0], r["frames_played"][-1]) if r["frames_played"] else ("-", "-")
        console.print(f"  rank {r['rank']} (local {r['local_rank']}, {place}): frames {first}..{last} ({r['frames']}) in "
                      f"{r['seconds']:.3f} s, delivered {r['delivered_gbps']:.3f} GB/s; {_sources(r)}")
    return 0


def run(args: argparse.Namespace) -> int:
    job = distributed.ranks()
    ds = headrace.open(args.file)
    share = job.frames_of(len(ds.frames)) if job.size > 1 else None
    played = (len(ds.frames) if share is None else len(share)) * args.loop
    if played > MOST_FRAMES_PLAYED:
        raise UsageError(f"--loop {args.loop}: {len(ds.frames):,} frames x {args.loop} plays {played:,} frames, "
                         f"more than {MOST_FRAMES_PLAYED:,}")
    device = job.device(choose_device(args.device))
    fields = args.fields or [f.name for f in ds.fields]
    for name in fields:
        ds.field(name)  # a usage error naming the fields there are
    # Options not given keep their defaults, overridden by HEADRACE_<NAME> (docs/settings.md).
    options = headrace.queue_options(**given_options(args))
    # A slot per frame in flight: one that no frame fills is never allocated.
    prefetch = max(1, min(args.prefetch, played))
    total = _stored_bytes(ds, fields, share) * args.loop
    stream = ds.stream(fields, device=device, prefetch=prefetch, loop=args.loop, frames=share, options=options)
    stopped = False
    try:
        job.barrier()  # the ranks start together: the job's time is the slowest rank's
        started, budget, before, stages_before = time.perf_counter(), Budget(args.budget), process_cpu_seconds(), cpu_by_stage()
        with byte_progress(f"streaming {played} frames", total, enabled=not args.json and job.size == 1) as update:
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
        after, stages = process_cpu_seconds(), cpu_by_stage().since(stages_before)  # while the engine's threads live
        cpu = (after[0] - before[0], after[1] - before[1])
        stats = stream.stats()
        described = stream.describe()
    finally:
        stream.close()
    summary = summarize(stats["frames"], seconds, stats["queue"], cpu, stages)
    summary.update(file=ds.path, device=str(device), configuration=described, frames_asked=played,
                   budget_spent=stopped)
    if job.size > 1:
        return _report_ranks(args, job, summary, stats["frames"])
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
                  f"(compression ratio {summary['compression_ratio']:.2f}); {_sources(summary)}")
    console.print(f"  CPU: {summary['cpu_s_per_gb']:.3f} s a GB delivered (user {summary['cpu_user_s']:.2f} s, system "
                  f"{summary['cpu_system_s']:.2f} s, every thread of the process)")
    by_stage = summary["cpu_s_per_gb_by_stage"]
    console.print(f"  CPU by stage, s a GB: reads {by_stage['io']:.3f}, checks, decoding and copies {by_stage['finish']:.3f}, "
                  f"dispatching {by_stage['engine']:.3f}, the rest (this program, CUDA) {by_stage['other']:.3f}")
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
