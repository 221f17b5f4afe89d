"""``headrace trace FILE --seeds ... --out LINES.vtp|LINES.npz``: streamlines of a flow container.

Seeds: ``uniform:N`` (about N on a lattice over the grid), ``feature:LOW[:HIGH]`` (grid points whose
vorticity magnitude is at least LOW, and below HIGH; every ``--seed-stride``-th point along each axis),
``rake:X0,Y0,Z0:X1,Y1,Z1:N`` (N on a segment), or an ``.npy`` file of (N, 3) world coordinates. The data manager is seed 002's: ``user`` (a
block cache of ``--cache-bytes`` in ``--banks`` banks, read with standard or ``--direct`` I/O) or
``mmap`` (the mapped file, ``madvise`` every ``--madvise-interval`` seconds, an optional
``--memory-budget``), or ``resident``, the GPU tracer: ``--device 0`` streams the units its lines ask
for through the engine's queue (``--backend``) into a cache of ``--cache-bytes`` in GPU memory and
steps every half-line on its own GPU thread (with ``--device cpu``, the same rounds on CPU threads, the
reference it is tested against). The output is written through a temporary file and renamed;
``--stats`` writes one CSV row with the run's time and counters. CPU threads may exceed the cores.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from headrace.cli._arguments import parse_size
from headrace.errors import UsageError

__all__ = ["register", "run", "parse_seeds", "device_name"]


def device_name(device: int | str) -> str:
    return "the CPU" if device == "cpu" else f"GPU {device}"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("trace", help="streamlines of a flow container (CPU, out of core)",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", metavar="FILE")
    parser.add_argument("--seeds", required=True,
                        help="uniform:N | feature:LOW[:HIGH] | rake:X0,Y0,Z0:X1,Y1,Z1:N | SEEDS.npy")
    parser.add_argument("--seed-stride", type=int, default=1, help="feature seeds: every S-th grid point (default 1)")
    parser.add_argument("--steps", type=int, default=1000, help="steps per direction (default 1000)")
    parser.add_argument("--step-size", type=float, default=0.01, help="in the field's time units (default 0.01)")
    parser.add_argument("--integrator", choices=("rk4", "rk45"), default="rk4")
    parser.add_argument("--direction", choices=("forward", "backward", "both"), default="forward")
    parser.add_argument("--manager", choices=("user", "mmap", "resident"), default=None,
                        help="data manager (default: user on the CPU, resident on a GPU)")
    parser.add_argument("--device", default="cpu", help="cpu (default) or a GPU ordinal: the GPU tracer")
    parser.add_argument("--backend", default="uring", choices=("posix", "direct", "mmap", "uring"),
                        help="resident: the queue's backend (default uring)")
    parser.add_argument("--cache-bytes", type=parse_size, default=1 << 30,
                        help="user, resident: cache capacity (default 1G)")
    parser.add_argument("--banks", type=int, default=1, help="user: cache banks (default 1)")
    parser.add_argument("--direct", action="store_true", help="user: direct I/O (O_DIRECT) instead of standard")
    parser.add_argument("--unit-pages", type=int, default=96, help="user, Hilbert layout: pages a cache unit holds")
    parser.add_argument("--madvise-interval", type=float, default=4.0, help="mmap: seconds between madvise (0: never)")
    parser.add_argument("--memory-budget", type=parse_size, default=None, help="mmap: page-cache budget (default none)")
    parser.add_argument("--threads", type=int, default=0, help="tracing threads (default: one per core)")
    parser.add_argument("--frame", type=int, default=0, help="time step (default 0)")
    parser.add_argument("--out", required=True, metavar="LINES.vtp|LINES.npz")
    parser.add_argument("--stats", metavar="OUT.csv", help="write the run's statistics as one CSV row")
    parser.add_argument("--json", action="store_true", help="print the statistics as JSON")
    parser.set_defaults(func=run)


def parse_seeds(text: str, file: str, stride: int = 1):
    from headrace import streamlines

    if text.startswith("uniform:"):
        return streamlines.uniform_seeds(file, int(text.split(":", 1)[1]))
    if text.startswith("feature:"):
        bounds = [float(v) for v in text.split(":")[1:]]
        if len(bounds) not in (1, 2):
            raise UsageError(f"--seeds {text!r}: expected feature:LOW or feature:LOW:HIGH")
        seeds = streamlines.feature_seeds(file, *bounds, stride=stride)
        if len(seeds) == 0:
            raise UsageError(f"--seeds {text!r}: no grid point has a vorticity magnitude in that range")
        return seeds
    if text.startswith("rake:"):
        parts = text.split(":")
        if len(parts) != 4:
            raise UsageError(f"--seeds {text!r}: expected rake:X0,Y0,Z0:X1,Y1,Z1:N")
        start, end = ([float(v) for v in p.split(",")] for p in parts[1:3])
        if len(start) != 3 or len(end) != 3:
            raise UsageError(f"--seeds {text!r}: a rake's ends have three coordinates each")
        return streamlines.rake_seeds(start, end, int(parts[3]))
    if text.endswith(".npy"):
        return streamlines.load_seeds(text)
    raise UsageError(f"--seeds {text!r}: expected uniform:N, rake:X0,Y0,Z0:X1,Y1,Z1:N or a .npy file")


def run(args: argparse.Namespace) -> int:
    import json

    from headrace import streamlines
    from headrace.bench.harness import write_rows
    from headrace.cli._output import console

    suffix = Path(args.out).suffix.lower()
    if suffix not in (".npz", ".vtp"):
        raise UsageError(f"--out {args.out}: expected a .npz or .vtp file")
    seeds = parse_seeds(args.seeds, args.file, args.seed_stride)
    result = streamlines.trace_run(args.file, seeds, steps=args.steps, step_size=args.step_size,
                                   integrator=args.integrator, direction=args.direction, manager=args.manager,
                                   device=args.device, backend=args.backend,
                                   threads=args.threads, frame=args.frame, cache_bytes=args.cache_bytes,
                                   banks=args.banks, direct=args.direct, unit_pages=args.unit_pages,
                                   madvise_interval_s=args.madvise_interval,
                                   memory_budget_bytes=args.memory_budget or 0)
    streamlines.write_lines(args.out, result.points, result.offsets)
    stats = {"file": args.file, "direct": args.direct, "banks": args.banks, "cache_bytes": args.cache_bytes,
             "integrator": args.integrator, "steps": args.steps, "step_size": args.step_size, **result.stats}
    if args.stats:
        write_rows(args.stats, [stats])
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        console.print(f"{args.file}: {stats['seeds']} streamlines, {stats['points']} points in {stats['seconds']:.3f} s "
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
        else:
            console.print(f"  mmap: {stats['madvise_calls']} madvise calls, {stats['budget_drops']} budget drops")
    return 0
