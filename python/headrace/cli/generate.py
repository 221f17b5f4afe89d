"""Writes a synthetic data set of any size to try headrace on: particles, a time-varying volume, a flow
field or an AMR field; the same --seed always gives the same values.

    headrace generate particles|volume|flow|amr OUT.hrc

particles: uniform random spheres filling a third of the unit box, 8 float32 each (x, y, z, radius,
r, g, b, a), frames repeating the same particles; volume: moving Gaussian blobs on a nodal grid; flow:
a velocity field stored in native blocks (the ABC flow, turbulence, or an unsteady flow whose paths are
known: a rotation whose rate changes with time, the 3D double gyre); amr: the moving blobs on levels of
bricks refined where they vary most, the topology fixed over time.

A data set holds at most 1 TiB of values, and an uncompressed one must fit the free space of OUT's
file system: both are checked before anything is written. An existing OUT.hrc is replaced only with
--force; a failed or interrupted run leaves no partial file.

Where this comes from: the particles are those of Müller and Ertl, "Quantifying Performance Gains of
DirectStorage for the Visualisation of Time-Dependent Particle Data Sets"; the flow field is the kind
traced by Jiang et al., "Multi-Threaded Streamline Tracing for Data-Intensive Architectures"; the AMR
field stands in for the NASA Exajet of the time-varying AMR study behind ``headrace play``
(docs/converters.md).
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from headrace.cli._output import byte_progress
from headrace.cli._shared import Integer, Items, Name, Real, describe_size
from headrace.cli._writer_options import (
    add_output_argument,
    add_writer_arguments,
    check_chunk_bytes,
    container_summary,
    interrupted,
    print_summary,
    refuse_existing,
    terminate_as_exit,
    writer_options,
)
from headrace.errors import UsageError
from headrace.generate import generate_amr, generate_flow, generate_particles, generate_volume
from headrace.generate.amr import MOST_CELLS as MOST_AMR_CELLS, MOST_LEVELS as MOST_AMR_LEVELS
from headrace.generate.flow import FLOW_KINDS, default_block
from headrace.writer import default_chunk_size

__all__ = ["register", "run", "MAX_DATA_BYTES"]

MAX_DATA_BYTES = 1 << 40  # the values one data set may hold (raw, before compression)
# Bytes of one element: a particle (8 float32), a volume point (float32), a flow point (3 float32), an
# AMR cell of one field (float32).
ELEMENT_BYTES = {"particles": 32, "volume": 4, "flow": 12, "amr": 4}
FRAMES = Integer(1, 1 << 20, "frames")
AXIS = Integer(2, 1 << 16, "points")


def register(subparsers: argparse._SubParsersAction, summary: str) -> None:
    parser = subparsers.add_parser("generate", help=summary, description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    kinds = parser.add_subparsers(dest="generator", required=True, metavar="KIND")  # flow's --kind is args.kind

    particles = kinds.add_parser("particles", help="uniform random particles",
                                 description="Writes uniform random particles (x, y, z, radius, r, g, b, a as 8 float32), "
                                             "the same particles in every frame.")
    add_output_argument(particles)
    most_particles = MAX_DATA_BYTES // ELEMENT_BYTES["particles"]
    particles.add_argument("--particles", type=Integer(1, most_particles, "particles"), required=True, metavar="N",
                           help="particles per frame (32 bytes each)")
    particles.add_argument("--frames", type=FRAMES, required=True, metavar="F",
                           help="frames (each repeats the particles)")

    volume = kinds.add_parser("volume", help="time-varying scalar field (moving Gaussian blobs)",
                              description="Writes a time-varying scalar field on a grid: Gaussian blobs that move from "
                                          "frame to frame.")
    add_output_argument(volume)
    volume.add_argument("--dims", type=AXIS, nargs=3, required=True, metavar=("X", "Y", "Z"),
                        help="grid points along x, y and z (4 bytes each)")
    volume.add_argument("--frames", type=FRAMES, required=True, metavar="F", help="time steps")
    volume.add_argument("--cutoff", type=Real(0.0, 10.0), default=0.0, metavar="C",
                        help="write values below C as 0: empty space, which compresses (default: 0, off; "
                             "the field peaks near 1)")

    flow = kinds.add_parser("flow", help="a velocity field stored in blocks (ABC, turbulence, unsteady analytic flows)",
                            description="Writes a velocity field (3 float32 a grid point) stored in blocks, for "
                                        "headrace trace: the analytic ABC flow, synthetic turbulence, or an unsteady "
                                        "flow whose paths are known in closed form or to any precision (a rotation "
                                        "whose rate changes with time; the time-dependent double gyre in 3D).")
    add_output_argument(flow)
    flow.add_argument("--dims", type=AXIS, nargs=3, required=True, metavar=("X", "Y", "Z"),
                      help="grid points along x, y and z (12 bytes each)")
    flow.add_argument("--block", type=Integer(1, 1 << 16, "points"), nargs=3, default=None, metavar=("BX", "BY", "BZ"),
                      help="block size in points, at most the grid's (default 32 32 32, or the grid where smaller); "
                           "blocks at the far edges are partial where it does not divide the grid")
    flow.add_argument("--frames", type=FRAMES, default=1, metavar="F", help="time steps (default: 1, a steady flow)")
    flow.add_argument("--kind", choices=tuple(FLOW_KINDS), default="abc",
                      help="the analytic ABC flow on [0, 2 pi]^3, synthetic turbulence at several scales, a rigid rotation "
                           "about z whose rate swings with time (with a steady rise) on [-1, 1]^3, or the time-dependent "
                           "double gyre on [0, 2] x [0, 1] x [0, 1] (default: abc)")
    flow.add_argument("--dt", type=Real(0.0, 1e6, "time units", above=True), default=None, metavar="DT",
                      help="time between frames (default: 1 for abc and turbulence, 0.1 for rotation and double-gyre)")

    amr = kinds.add_parser("amr", help="time-varying AMR: moving blobs on levels refined where they vary most "
                                       "(topology fixed over time)",
                           description="Writes a time-varying AMR field: moving blobs on levels of bricks refined "
                                       "where they vary most, the refinement the same in every frame.")
    add_output_argument(amr)
    amr.add_argument("--cells", type=Integer(1, MOST_AMR_CELLS, "cells"), required=True, metavar="N",
                     help="leaf cells per frame (4 bytes each per field); the count made is within 10 %% of N")
    amr.add_argument("--levels", type=Integer(1, MOST_AMR_LEVELS, "levels"), required=True, metavar="L",
                     help="refinement levels (ratio 2 between them); one level is a uniform grid of bricks")
    amr.add_argument("--frames", type=FRAMES, required=True, metavar="F", help="time steps")
    amr.add_argument("--fields", type=Items(Name(), most_items=16), default=["scalar"], metavar="NAMES",
                     help="comma-separated field names, distinct (default: scalar); field k is the field of seed S + k")
    amr.add_argument("--brick", type=Integer(2, 64, "cells"), default=8, metavar="B",
                     help="brick edge: level 0 is cut into bricks of B^3 cells, a refined brick into 8 such bricks "
                          "of the next level (default: 8)")
    amr.add_argument("--single-cell-bricks", action="store_true",
                     help="ragged level boundaries, as around an aircraft's hull: refine single cells next to refined bricks, "
                          "which cuts bricks into many small and single-cell ones")

    for sub in (particles, volume, flow, amr):
        sub.add_argument("--seed", type=Integer(0, (1 << 32) - 1), default=0,
                         help="seed of numpy.random.default_rng (default: 0)")
        add_writer_arguments(sub)
        sub.set_defaults(func=run)


def _data_bytes(args: argparse.Namespace) -> int:
    """The raw bytes the data set holds; a ``UsageError`` naming the options above the bound."""
    if args.generator == "particles":
        elements, named = args.particles, f"--particles {args.particles:,}"
    elif args.generator == "amr":  # the cells made are within 10 % of --cells
        elements, named = args.cells * len(args.fields), f"--cells {args.cells:,} x {len(args.fields)} fields"
    else:
        elements, named = args.dims[0] * args.dims[1] * args.dims[2], "--dims " + " ".join(map(str, args.dims))
    total = elements * ELEMENT_BYTES[args.generator] * args.frames
    if total > MAX_DATA_BYTES:
        raise UsageError(f"{named} x --frames {args.frames:,} make {total:,} bytes of values; generate writes at most "
                         f"{describe_size(MAX_DATA_BYTES)}")
    return total


def _check_flow_chunks(args: argparse.Namespace) -> None:
    """A flow's chunks hold whole blocks: a block larger than --chunk-size would silently make bigger chunks."""
    block_bytes = args.block[0] * args.block[1] * args.block[2] * ELEMENT_BYTES["flow"]
    if args.chunk_size is not None and block_bytes > args.chunk_size:
        raise UsageError(f"--block {' '.join(map(str, args.block))} is {block_bytes:,} bytes a block, more than "
                         f"--chunk-size {args.chunk_size:,}: a chunk holds whole blocks")
    target = args.chunk_size or default_chunk_size(args.codec)
    check_chunk_bytes(args.codec, max(1, target // block_bytes) * block_bytes, "--block")


def _check_room(output: str, data_bytes: int, codec: str) -> None:
    """Uncompressed, the file is about as large as its values: refuse one its file system cannot hold."""
    if codec != "none":  # how much a codec saves is known only once written
        return
    free = shutil.disk_usage(os.path.dirname(os.path.abspath(output))).free
    if data_bytes > free:
        raise UsageError(f"{output}: {data_bytes:,} bytes of values, but its file system has {free:,} bytes free "
                         "(fewer --particles, --dims or --frames, or a --codec)")


def run(args: argparse.Namespace) -> int:
    options = writer_options(args)
    total = _data_bytes(args)
    generate: Callable[..., Path]  # each generator takes its own sizes (keywords)
    if args.generator == "particles":
        generate, sizes = generate_particles, dict(particles=args.particles, frames=args.frames)
    elif args.generator == "volume":
        generate, sizes = generate_volume, dict(dims=args.dims, frames=args.frames, cutoff=args.cutoff)
    elif args.generator == "amr":
        generate, sizes = generate_amr, dict(cells=args.cells, levels=args.levels, frames=args.frames,
                                             fields=args.fields, brick=args.brick,
                                             single_cell_bricks=args.single_cell_bricks)
    else:
        args.block = args.block or default_block(args.dims)
        _check_flow_chunks(args)
        generate, sizes = generate_flow, dict(dims=args.dims, block=args.block, frames=args.frames, kind=args.kind,
                                              dt=args.dt)
    before = refuse_existing(args.output, args.force)
    _check_room(args.output, total, args.codec)
    started = time.perf_counter()
    try:
        with terminate_as_exit(), byte_progress(f"generating {args.generator}", total,
                                                enabled=not args.json) as update:
            path = generate(args.output, progress=update, seed=args.seed, **sizes, **options)
        summary = container_summary(Path(path), time.perf_counter() - started, generator=args.generator,
                                    seed=args.seed)
    except KeyboardInterrupt:
        return interrupted("generate", args.output, before)
    if args.generator == "amr":  # millions of brick integers are no summary: their count and the cells instead
        attributes = summary["attributes"]
        assert isinstance(attributes, dict)
        bricks = np.asarray(attributes.pop("amr_bricks")).reshape(-1, 7)
        summary["bricks"], summary["cells"] = len(bricks), int(np.prod(bricks[:, 4:7], axis=1).sum())
    print_summary(summary, args.json)
    return 0
