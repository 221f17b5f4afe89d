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
Pathlines (``--pathlines``) carry each seed through the series' time, from ``--t0`` to ``--t1`` (default:
the first frame's time and the last's; ``--t1`` before ``--t0`` traces backward), the velocity linear in
time between the frames that bracket it, every step ending on a frame's time rather than crossing it; the
frames stream through the engine into a cache of ``--cache-bytes`` (whole frames when it holds two or more)
while the paths step, on ``--device 0`` one GPU thread a path. ``--step-size`` is in the series' time
units; ``--steps`` (default: enough for a fixed step to reach ``--t1``) caps a path. Their ``.vtp`` carries
per point ``Time``, ``IntegrationTime``, ``Velocity`` and ``Speed``, per path ``SeedIds``, ``ReleaseTime``
and ``ReasonForTermination``; a ``.pvd`` is the particles at every frame's time, a series ParaView animates.
Streaklines (``--streaklines``) release every seed again every ``--release-every`` steps, each release a
particle: their ``.pvd`` holds each seed's streak at every frame's time (its particles joined in release
order), their ``.npz`` every particle's path.
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
import math
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import headrace
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
    parser.add_argument("--steps", type=Integer(1, MOST_STEPS, "steps"), default=None,
                        help="steps per direction (default 1000; pathlines: enough for a fixed step to reach --t1)")
    parser.add_argument("--step-size", type=Real(0, 1e6, above=True), default=0.01,
                        help="in the field's time units (default 0.01)")
    parser.add_argument("--integrator", choices=("rk4", "rk45"), default="rk4",
                        help="fixed-step Runge-Kutta 4, or adaptive Runge-Kutta 4(5) (default rk4)")
    parser.add_argument("--direction", choices=("forward", "backward", "both"), default=None,
                        help="along the flow, against it, or both from each seed (default forward)")
    parser.add_argument("--pathlines", action="store_true",
                        help="paths through the series' time from --t0 to --t1, instead of streamlines of one frame")
    parser.add_argument("--streaklines", action="store_true",
                        help="streaks from --t0 to --t1: every seed released again every --release-every steps")
    parser.add_argument("--release-every", type=Integer(1, MOST_STEPS, "steps"), default=None,
                        help="streaklines: steps of --step-size between two releases of a seed (default 1)")
    parser.add_argument("--t0", type=Real(-1e300, 1e300, "time"), default=None,
                        help="pathlines: the seeds' release (default: the first frame's time)")
    parser.add_argument("--t1", type=Real(-1e300, 1e300, "time"), default=None,
                        help="pathlines: the time traced to (default: the last frame's time; before --t0: backward)")
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
    parser.add_argument("--frame", type=Integer(0, (1 << 32) - 1), default=None, help="time step (default 0)")
    parser.add_argument("--out", required=True, type=OutputFile((".npz", ".vtp", ".pvd")), metavar="LINES.vtp|LINES.npz|SERIES.pvd",
                        help="the lines: .npz (points, offsets) or .vtp (ParaView); pathlines and streaklines also .pvd "
                             "(a series of the particles at every frame's time)")
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


def _told(advance: Callable[..., None], budget: Budget) -> Callable[[int, int], bool]:
    """The tracer's progress(done, of) moving the bar, and False once the budget is spent (the run stops)."""
    shown = 0

    def progress(done: int, of: int) -> bool:
        nonlocal shown
        advance(done - shown, total=of)
        shown = done
        return not budget.spent(1)

    return progress


def _trace(args: argparse.Namespace, flow: str, device: int | str) -> int:
    if args.pathlines or args.streaklines:
        return _trace_paths(args, flow, device)
    for name in ("t0", "t1", "release_every"):
        if getattr(args, name) is not None:
            flag = name.replace("_", "-")
            raise UsageError(f"--{flag}: for pathlines and streaklines (--pathlines, --streaklines); streamlines trace one --frame")
    if args.out.lower().endswith(".pvd"):
        raise UsageError(f"--out {args.out}: a .pvd series holds pathlines' or streaklines' particles; streamlines are .vtp or .npz")
    args.steps = 1000 if args.steps is None else args.steps
    args.direction = args.direction or "forward"
    args.frame = args.frame or 0
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
        progress = _told(advance, budget)
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


def _trace_paths(args: argparse.Namespace, flow: str, device: int | str) -> int:
    """Pathlines (or streaklines) from the seeds at --t0 to --t1, written with their times and velocities."""
    if args.pathlines and args.streaklines:
        raise UsageError("--pathlines and --streaklines: one or the other")
    if args.release_every is not None and not args.streaklines:
        raise UsageError("--release-every: how often --streaklines release their seeds")
    for name, value, why in (("direction", args.direction, "the paths run from --t0 to --t1 (--t1 before --t0: backward)"),
                             ("frame", args.frame, "the paths run through every frame between --t0 and --t1"),
                             ("manager", args.manager if args.manager != "resident" else None,
                              "pathlines step in the resident tracer's rounds")):
        if value is not None:
            raise UsageError(f"--{name} {value}: {why}")
    times = [frame.time for frame in headrace.open(flow).frames]
    t0 = times[0] if args.t0 is None else args.t0
    t1 = times[-1] if args.t1 is None else args.t1
    if args.steps is None:  # a fixed step's count to t1, and one more in each interval its frames cut short
        args.steps = max(1, math.ceil(abs(t1 - t0) / args.step_size) + len(times))
        if args.steps > MOST_STEPS:
            raise UsageError(f"--step-size {args.step_size}: {args.steps:,} steps from t0 = {t0} to t1 = {t1}, more than "
                             f"{MOST_STEPS:,}: a larger step, or --steps to cap the paths")
    seeds = parse_seeds(args.seeds, flow, args.seed_stride)
    expect_memory_for_lines(len(seeds), args.steps * 8 // 3, "forward")  # a point of a path: 32 bytes, 12 a line's
    job = distributed.ranks()
    note = placed(args.seeds, seeds)
    if note and job.root:
        say(note)
    every_seed = len(seeds)
    if job.size > 1:  # each rank a block of the seeds on its own GPU, every rank streaming the whole series
        seeds = seeds[job.frames_of(len(seeds))] if len(seeds) else seeds
        device = job.device(device) or device
    budget = Budget(args.budget)
    what = "streaklines" if args.streaklines else "pathlines"
    with count_progress(f"tracing {every_seed:,} {what} from t = {t0:g} to {t1:g} on {device_name(device)}", 0,
                        enabled=not args.json and job.size == 1) as advance:
        options: dict[str, Any] = dict(t0=t0, t1=t1, steps=args.steps, step_size=args.step_size, integrator=args.integrator, device=device,
                       threads=args.threads, cache_bytes=args.cache_bytes, unit_pages=args.unit_pages, backend=args.backend,
                       progress=_told(advance, budget))
        if args.streaklines:
            result = streamlines.trace_streaklines(flow, seeds, release_every=args.release_every or 1, **options)
        else:
            result = streamlines.trace_pathlines(flow, seeds, **options)
    if job.size > 1:
        parts = job.gather(result)
        if not job.root:
            return 0
        assert parts is not None
        result = streamlines.PathlineResult.joined(parts, job.block_bounds(every_seed)[:-1])
        result.stats["ranks"] = job.size
    stopped = result.ends.count("stopped")
    if stopped:
        console.print(budget.said(len(result.ends) - stopped, len(result.ends), "paths ended") +
                      f"; the other {stopped:,} end where they were (their ends read 'stopped' in an .npz)")
    traced = time.perf_counter()
    if args.out.lower().endswith(".pvd"):
        streamlines.write_series(args.out, result, streaks=args.streaklines)
    else:
        streamlines.write_pathlines(args.out, result)
    stats = {**result.stats, "file": args.file, "cache_bytes": args.cache_bytes, "paths_stopped": stopped,
             "command_seconds": time.perf_counter() - args.started, "write_seconds": time.perf_counter() - traced}
    if args.stats:
        write_rows(args.stats, [stats])
    if args.json:
        print(json.dumps(stats, indent=2))
        return 0
    ends = ", ".join(f"{result.ends.count(end):,} {end.replace('_', ' ')}" for end in sorted(set(result.ends)))
    released = f" ({stats['particles']:,} particles, {stats['releases']} releases a seed)" if args.streaklines else ""
    by = f" by {job.size} ranks (the slowest's time)" if job.size > 1 else ""
    console.print(f"{args.file}: {stats['seeds']:,} {what}{released} from t = {stats['t0']:g} to {stats['t1']:g}, "
                  f"{stats['points']:,} points in {stats['seconds']:.3f} s{by} ({stats['layout']} layout, "
                  f"{stats['intervals']} frame intervals on {device_name(stats['device'])}; ends: {ends}) -> {args.out}")
    held = (f"whole frames, {stats['frames_loaded']} read" if stats["whole_frames"] else
            f"{stats['resident_slots']} units in {stats['resident_rounds']} rounds, {stats['resident_units_loaded']} loads, "
            f"{stats['resident_evictions']} evictions")
    console.print(f"  resident cache: {held}; {stats['bytes_read'] / 1e6:.1f} MB read, waited {stats['resident_load_seconds']:.3f} s, "
                  f"stepping {stats['resident_advance_seconds']:.3f} s")
    return 0


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
