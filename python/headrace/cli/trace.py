"""Traces streamlines through a flow field (a velocity on a grid) from seed points and writes them for
ParaView (.vtp) or NumPy (.npz).

    headrace trace FILE --seeds ... --out LINES.vtp|LINES.npz

FILE is a flow container (``headrace generate flow``, or ``headrace convert --layout blocks|hilbert``) or
any grid ``headrace convert`` reads (a container in grid order, ``.vti``, ``.npy``, HDF5, zarr, BOV, ...):
that one is made into native blocks in a temporary folder for the run, said once, with blocks small
enough that ``--cache-bytes`` holds plenty of them. The velocity is ``--field NAME`` (3 components) or
``--field U,V,W`` (three scalar fields); by default the file's one field of 3 components, else the one
named like a velocity (velocity, vel, u, v, ...), else u,v,w or vx,vy,vz. float64 and float16 velocities
are traced in float32, said once.

Seeds: ``uniform:N`` (about N on a lattice over the grid), ``feature:LOW[:HIGH]`` (grid points whose
vorticity magnitude is at least LOW, and below HIGH; every ``--seed-stride``-th point along each axis),
``rake:X0,Y0,Z0:X1,Y1,Z1:N`` (N on a segment), or an ``.npy`` file of (N, 3) world coordinates; a
lattice holds the count asked for or the nearest one of equal spacing, which is said. The data manager (``--manager``) is ``user`` (a
block cache of ``--cache-bytes`` in ``--banks`` banks, read with standard or ``--direct`` I/O) or
``mmap`` (the mapped file, ``madvise`` every ``--madvise-interval`` seconds, an optional
``--memory-budget``), or ``resident``, the GPU tracer: ``--device 0`` streams the units its lines ask
for through the engine's queue (``--backend``) into a cache of ``--cache-bytes`` in GPU memory and
steps every half-line on its own GPU thread (with ``--device cpu``, the same rounds on CPU threads, the
reference it is tested against; a GPU asked for on a machine without one traces on the CPU, said once).
The output is written through a temporary file and renamed; ``--stats`` writes one CSV row with the
run's time and counters. Both outputs are checked before the tracing starts. CPU threads may exceed the
cores.

Where this comes from: the user and mmap data managers, the Hilbert layout and the seeding are those of
Jiang, Van Essen, Harrison and Gokhale, "Multi-Threaded Streamline Tracing for Data-Intensive
Architectures" (docs/streamlines.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from headrace import distributed
from headrace._files import write_rows
from headrace.cli._output import console, count_progress
from headrace.cli._seeds import MOST_STEPS, UNIT_PAGES, Seeds, expect_memory_for_lines, parse_seeds, seed_spec
from headrace.cli._shared import (
    Budget,
    Device,
    Integer,
    Items,
    Name,
    OutputFile,
    Path as PathArgument,
    Real,
    Size,
    add_budget_argument,
    choose_device,
)
from headrace.errors import UsageError
from headrace.workloads import streamlines
from headrace.workloads.streamlines import DISTRIBUTIONS, MOST_MADVISE_INTERVAL_S

__all__ = ["register", "run", "placed", "device_name", "say"]


def device_name(device: int | str) -> str:
    return "the CPU" if device == "cpu" else f"GPU {device}"


def register(subparsers: argparse._SubParsersAction, summary: str) -> None:
    parser = subparsers.add_parser("trace", help=summary,
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", metavar="FILE", type=PathArgument(),
                        help="a flow container, or a grid headrace convert reads (.vti, .npy, HDF5, zarr, BOV, ...)")
    parser.add_argument("--field", type=Items(Name(255), 3), metavar="NAME|U,V,W",
                        help="the velocity: one field of 3 components, or three scalar fields (default: the one field of "
                             "3 components, else one named velocity, vel, u, v, ..., else u,v,w or vx,vy,vz)")
    parser.add_argument("--seeds", required=True, type=Seeds(), help="where the lines start")
    parser.add_argument("--seed-stride", type=Integer(1, 1024), default=1,
                        help="feature seeds: every S-th grid point along each axis (default 1)")
    parser.add_argument("--steps", type=Integer(1, MOST_STEPS, "steps"), default=1000, help="steps per direction (default 1000)")
    parser.add_argument("--step-size", type=Real(0, 1e6, above=True), default=0.01,
                        help="in the field's time units (default 0.01)")
    parser.add_argument("--integrator", choices=("rk4", "rk45"), default="rk4",
                        help="fixed-step Runge-Kutta 4, or adaptive Runge-Kutta 4(5) (default rk4)")
    parser.add_argument("--direction", choices=("forward", "backward", "both"), default="forward",
                        help="along the flow, against it, or both from each seed (default forward)")
    parser.add_argument("--manager", choices=("user", "mmap", "resident"), default=None,
                        help="data manager (default: resident, the GPU tracer's rounds on a GPU or on CPU threads; "
                             "user when --banks or --direct is given)")
    parser.add_argument("--device", type=Device(), default="cpu",
                        help="where to trace (default cpu); a GPU runs the GPU tracer, and where there is none the CPU "
                             "traces instead, said once")
    parser.add_argument("--backend", default="auto", choices=("auto", "posix", "direct", "mmap", "uring"),
                        help="resident: the queue's backend (default auto: the engine's read path, a file cached whole "
                             "page-locked and copied by DMA)")
    parser.add_argument("--cache-bytes", type=Size(4096, 1 << 40), default=1 << 30,
                        help="user, resident: cache capacity (default 1G)")
    parser.add_argument("--banks", type=Integer(1, 1024), default=1, help="user: cache banks (default 1)")
    parser.add_argument("--direct", action="store_true", help="user: direct I/O (O_DIRECT) instead of standard")
    parser.add_argument("--unit-pages", type=UNIT_PAGES, default=96,
                        help="user and resident, Hilbert layout: pages a cache unit holds (default 96)")
    parser.add_argument("--madvise-interval", type=Real(0, MOST_MADVISE_INTERVAL_S, "seconds"), default=4.0,
                        help="mmap: seconds between madvise calls (0: never; default 4)")
    parser.add_argument("--memory-budget", type=Size(4096, 1 << 40), default=None, help="mmap: page-cache budget (default none)")
    parser.add_argument("--threads", type=Integer(0, 1024), default=0, help="tracing threads (default 0: one per core)")
    parser.add_argument("--distribute", choices=DISTRIBUTIONS, default="auto",
                        help="under MPI, how the ranks share the field: replicate (every rank reads any block its lines "
                             "need), hand-off (every rank holds its planes of blocks; a line goes to the rank holding the "
                             "block it needs), auto (hand-off when the frame's velocity is larger than --cache-bytes and "
                             "the file holds native blocks; the default)")
    parser.add_argument("--frame", type=Integer(0, (1 << 32) - 1), default=0, help="time step (default 0)")
    parser.add_argument("--out", required=True, type=OutputFile((".npz", ".vtp")), metavar="LINES.vtp|LINES.npz",
                        help="the lines: .npz (points, offsets) or .vtp (ParaView)")
    parser.add_argument("--stats", type=OutputFile(), metavar="OUT.csv", help="write the run's statistics as one CSV row")
    parser.add_argument("--json", action="store_true", help="print the statistics as JSON")
    add_budget_argument(parser, "seconds after which no new line starts: lines not ended by then end where they "
                                "are, marked 'stopped' (default none)")
    parser.set_defaults(func=run)


def placed(text: str, seeds: np.ndarray) -> str | None:
    """What to say when a ``uniform:N`` lattice holds other than the N seeds asked for (None otherwise)."""
    kind, values = seed_spec(text)
    if kind != "uniform" or len(seeds) == values[0]:
        return None
    # uniform_seeds' lattice: along each axis, the seeds that share the first seed's other two coordinates
    # (np.unique of each axis sorted 64 k seeds three times, 30 ms of a command's wall)
    lattice = " x ".join(str(int(np.count_nonzero((seeds[:, (axis + 1) % 3] == seeds[0, (axis + 1) % 3]) &
                                                  (seeds[:, (axis + 2) % 3] == seeds[0, (axis + 2) % 3]))))
                         for axis in range(3))
    return (f"--seeds {text}: placed {len(seeds):,} seeds, a {lattice} lattice of one spacing along every axis (the "
            f"nearest such lattice to {values[0]:,}); rake:...:N or an .npy file of seeds places an exact count")


def say(text: str) -> None:
    """A choice made for the user, said once on stderr (stdout keeps the results and --json)."""
    print(f"headrace trace: {text}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    args.started = time.perf_counter()  # the statistics say the setup and the writing apart from the trace
    device = choose_device(args.device, "tracing on the CPU instead")
    manager = args.manager or streamlines.default_manager(args.banks, args.direct)
    fit = None if manager == "mmap" else args.cache_bytes  # blocks made on the fly fit the cache
    with streamlines.traceable(args.file, say=say, field=args.field, cache_bytes=fit, banks=args.banks) as flow:
        return _trace(args, flow, device)


def _trace(args: argparse.Namespace, flow: str, device: int | str) -> int:
    job = distributed.ranks()
    seeds = parse_seeds(args.seeds, flow, args.seed_stride)
    expect_memory_for_lines(len(seeds), args.steps, args.direction)
    note = placed(args.seeds, seeds)
    if note and job.root:
        say(note)
    every_seed = len(seeds)
    if job.size > 1 and streamlines.distribution(flow, args.distribute, args.cache_bytes, args.frame) == "hand-off":
        if args.manager not in (None, "resident"):
            raise UsageError(f"--manager {args.manager}: handing lines off steps them in the resident tracer's rounds")
        handed = streamlines.trace_handed(flow, seeds, steps=args.steps, step_size=args.step_size,
                                          integrator=args.integrator, direction=args.direction,
                                          device=job.device(device) or device, threads=args.threads, frame=args.frame,
                                          cache_bytes=args.cache_bytes, backend=args.backend)
        return 0 if handed is None else _report(args, handed, job.size, every_seed, Budget(args.budget))
    if job.size > 1:  # each rank a block of the seeds, on its own GPU; each reads the blocks its lines need
        seeds = seeds[job.frames_of(len(seeds))] if len(seeds) else seeds
        device = job.device(device) or device
    budget = Budget(args.budget)
    with count_progress(f"tracing {every_seed:,} lines of up to {args.steps:,} steps on {device_name(device)}",
                        0, enabled=not args.json and job.size == 1) as advance:
        shown = 0

        def progress(ended: int, lines: int) -> bool:
            nonlocal shown
            advance(ended - shown, total=lines)
            shown = ended
            return not budget.spent(1)

        result = streamlines.trace_run(flow, seeds, steps=args.steps, step_size=args.step_size,
                                       integrator=args.integrator, direction=args.direction, manager=args.manager,
                                       device=device, backend=args.backend,
                                       threads=args.threads, frame=args.frame, cache_bytes=args.cache_bytes,
                                       banks=args.banks, direct=args.direct, unit_pages=args.unit_pages,
                                       madvise_interval_s=args.madvise_interval,
                                       memory_budget_bytes=args.memory_budget or 0, progress=progress)
        progress(len(result.ends), len(result.ends))  # the tracer tells now and then, not at its end
    if job.size > 1:
        parts = job.gather(result)
        if not job.root:
            return 0
        assert parts is not None
        result = streamlines.TraceResult.joined(parts)
        result.stats["ranks"] = job.size
    return _report(args, result, job.size, every_seed, budget)


def _report(args: argparse.Namespace, result, ranks: int, seeds: int, budget: Budget) -> int:
    """Writes the lines and the statistics, and says what the run did."""
    stopped = sum("stopped" in end for end in result.ends)
    if stopped:
        console.print(budget.said(seeds - stopped, seeds, "lines ended") +
                      f"; the other {stopped:,} end where they were (their ends read 'stopped' in an .npz)")
    traced = time.perf_counter()
    streamlines.write_traced(args.out, result, threads=args.threads)
    stats = {"direct": args.direct, "banks": args.banks, "cache_bytes": args.cache_bytes,
             "integrator": args.integrator, "steps": args.steps, "step_size": args.step_size,
             "lines_stopped": stopped, **result.stats, "file": args.file,  # the user's file, not blocks made for it
             # The command's own seconds (after the interpreter and imports): before the trace (seeds, the
             # file made traceable), the trace's, and writing the lines with their sampled velocities.
             "command_seconds": time.perf_counter() - args.started,
             "write_seconds": time.perf_counter() - traced}
    if args.stats:
        write_rows(args.stats, [stats])
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        timed = "to the lines on rank 0" if stats["manager"] == "hand-off" else "the slowest's time"
        by = f" by {ranks} ranks ({timed})" if ranks > 1 else ""
        console.print(f"{args.file}: {stats['seeds']} streamlines, {stats['points']} points in {stats['seconds']:.3f} s{by} "
                      f"({stats['layout']} layout, {stats['manager']}-managed on {device_name(stats['device'])}) -> {args.out}")
        if stats["manager"] == "resident":
            console.print(f"  resident cache: {stats['resident_slots']} units, {stats['resident_rounds']} rounds, "
                          f"{stats['resident_units_loaded']} loads, {stats['resident_evictions']} evictions, "
                          f"{stats['bytes_read'] / 1e6:.1f} MB read in {stats['resident_load_seconds']:.3f} s, "
                          f"stepping {stats['resident_advance_seconds']:.3f} s")
        elif stats["manager"] == "user":
            console.print(f"  cache: {stats['cache_hits']} hits, {stats['cache_misses']} misses, "
                          f"{stats['cache_evictions']} evictions, {stats['bytes_read'] / 1e6:.1f} MB read, "
                          f"up to {stats['max_loads_in_flight']} reads at once")
        elif stats["manager"] == "hand-off":
            console.print(f"  hand-off: {stats['lines_handed']} lines handed between ranks in {stats['exchanges']} exchanges; "
                          f"each rank's cache of {stats['resident_blocks']} blocks, {stats['bytes_read'] / 1e6:.1f} MB read in "
                          f"{stats['resident_load_seconds']:.3f} s, stepping {stats['resident_advance_seconds']:.3f} s")
            console.print("  the job's time (each phase's slowest rank; the last, rank 0's): " +
                          ", ".join(f"{name.replace('_', ' ')} {seconds:.3f} s" for name, seconds in stats["phase_seconds"].items()))
        else:
            console.print(f"  mmap: {stats['madvise_calls']} madvise calls, {stats['budget_drops']} budget drops")
    return 0
