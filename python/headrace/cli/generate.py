"""``headrace generate particles|volume|flow OUT.hrc``: seeded synthetic data sets.

particles: seed 000's series (uniform random spheres filling a third of the unit box, 8 float32 each,
frames repeating the same particles); volume: moving Gaussian blobs on a nodal grid; flow: an ABC
velocity field stored in native blocks (seed 002). The same seed always gives the same values.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from headrace.cli._writer_options import add_writer_arguments, container_summary, print_summary, terminate_as_exit, writer_options

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("generate", help="write a seeded synthetic data set", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND")

    particles = kinds.add_parser("particles", help="uniform random particles (seed 000, section 4.2)")
    particles.add_argument("output", metavar="OUT.hrc")
    particles.add_argument("--particles", type=int, required=True, metavar="N", help="particles per frame")
    particles.add_argument("--frames", type=int, required=True, metavar="F", help="frames (each repeats the particles)")

    volume = kinds.add_parser("volume", help="time-varying scalar field (moving Gaussian blobs)")
    volume.add_argument("output", metavar="OUT.hrc")
    volume.add_argument("--dims", type=int, nargs=3, required=True, metavar=("X", "Y", "Z"), help="grid points")
    volume.add_argument("--frames", type=int, required=True, metavar="F", help="time steps")
    volume.add_argument("--cutoff", type=float, default=0.0, metavar="C",
                        help="write values below C as 0: empty space, which compresses (default: 0, off)")

    flow = kinds.add_parser("flow", help="ABC velocity field stored in blocks (seed 002)")
    flow.add_argument("output", metavar="OUT.hrc")
    flow.add_argument("--dims", type=int, nargs=3, required=True, metavar=("X", "Y", "Z"), help="grid points")
    flow.add_argument("--block", type=int, nargs=3, required=True, metavar=("BX", "BY", "BZ"),
                      help="block size in points; the dims must be multiples of it")
    flow.add_argument("--frames", type=int, default=1, metavar="F", help="time steps (default: 1, a steady flow)")
    flow.add_argument("--kind", choices=("abc", "turbulence"), default="abc",
                      help="the analytic ABC flow, or synthetic turbulence at several scales (default: abc)")

    for sub in (particles, volume, flow):
        sub.add_argument("--seed", type=int, default=0, help="seed of numpy.random.default_rng (default: 0)")
        add_writer_arguments(sub)
        sub.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from headrace.cli._output import byte_progress, console
    from headrace.generate import generate_flow, generate_particles, generate_volume

    common = dict(seed=args.seed, **writer_options(args))
    if args.kind == "particles":
        generate, sizes = generate_particles, dict(particles=args.particles, frames=args.frames)
        total = args.particles * 32 * args.frames
    elif args.kind == "volume":
        generate, sizes = generate_volume, dict(dims=args.dims, frames=args.frames, cutoff=args.cutoff)
        total = args.dims[0] * args.dims[1] * args.dims[2] * 4 * args.frames
    else:
        generate, sizes = generate_flow, dict(dims=args.dims, block=args.block, frames=args.frames, kind=args.kind)
        total = args.dims[0] * args.dims[1] * args.dims[2] * 12 * args.frames
    started = time.perf_counter()
    try:
        with terminate_as_exit(), byte_progress(f"generating {args.kind}", total,
                                                enabled=not args.json) as update:
            path = generate(args.output, progress=update, **sizes, **common)
    except KeyboardInterrupt:
        console.print(f"headrace generate: interrupted; {args.output} was not written")
        return 130
    summary = container_summary(Path(path), time.perf_counter() - started, generator=args.kind, seed=args.seed)
    print_summary(summary, args.json)
    return 0
