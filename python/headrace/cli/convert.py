"""Converts your data into a headrace container: raw particles, MegaMol MMPLD, BOV, NumPy, VTK, HDF5
(H5Part too), NetCDF, zarr files or AMReX plotfiles.

    headrace convert IN OUT.hrc

``headrace convert FLOW.hrc OUT.hrc --layout hilbert|blocks`` rewrites a flow field (float32 x 3) in the
Hilbert layout (blocks ordered along a space-filling curve, so that a streamline's next block is near on
disk) or in native blocks and reports the time the layout took to build.
From native blocks (``headrace generate flow``) the Hilbert layout is built partition by partition, out
of core; from a grid in grid order (a BOV brick converted first) one frame at a time in memory.

The input format is guessed from the extension or the first bytes unless ``--format`` names it; a
headerless .raw file is a grid (--dims X Y Z --dtype T, or a name NAME_XxYxZ_TYPE.raw) or particles
(--particles-per-frame, --frames, --format raw-particles) only as its options or name say. An array's
leading time axis becomes frames ((t, Z, Y, X), (t, Z, Y, X, c); --time-axis N names it); a 4-D array
that may be a grid of components or a time series is refused naming --components and --time-axis. Several
inputs (BOV headers, .npy or .npz files, .vti or .vtp files, AMReX plotfile folders; a directory; a quoted
glob) become frames in order; a ParaView .pvd names its frames itself. AMReX plotfiles become leaf bricks of
an AMR topology stored once (docs/volume.md); every plotfile of a series must share it. An existing
OUT.hrc is replaced only with --force; a failed or interrupted conversion leaves no output file.
Mapping rules: docs/converters.md.

Where this comes from: the Hilbert layout is that of Jiang, Van Essen, Harrison and Gokhale,
"Multi-Threaded Streamline Tracing for Data-Intensive Architectures" (docs/streamlines.md).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import headrace
from headrace.cli._output import byte_progress, console
from headrace.cli._shared import Integer, Items, Name, Path as PathArgument, Word
from headrace.cli._writer_options import (
    add_output_argument,
    add_writer_arguments,
    container_summary,
    interrupted,
    print_summary,
    refuse_existing,
    terminate_as_exit,
    writer_options,
)
from headrace.convert import check_output, open_source, write_source
from headrace.convert.formats import InputFormat, resolve_inputs
from headrace.convert.source import ConversionNote
from headrace.errors import UsageError
from headrace.workloads import streamlines

__all__ = ["register", "run"]

# Element types of a raw grid: NumPy names (little-endian) and byte-order codes (<u2, >f4, ...).
RAW_DTYPES = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32", "float64") + tuple(
    order + code for code in ("u2", "i2", "u4", "i4", "u8", "i8", "f4", "f8") for order in "<>")
HILBERT_BITS = 6
CHUNK_PAGES = 96


# Hilbert chunks in 4 KiB pages: whole 12-byte points (3 pages hold 1024); at most the 256 MiB the
# engine's staging holds (hilbert_field.cpp).
HILBERT_CHUNK_PAGES = Integer(3, 65535, "pages of 4 KiB", multiple_of=3)


def register(subparsers: argparse._SubParsersAction, summary: str) -> None:
    parser = subparsers.add_parser("convert", help=summary,
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", nargs="+", metavar="IN", type=PathArgument(),
                        help="input file(s), a directory or a quoted glob; several become frames in order")
    add_output_argument(parser)
    parser.add_argument("--format", choices=tuple(kind.value for kind in InputFormat),
                        help="input format (default: guessed from the extension or the first bytes)")
    grid = parser.add_argument_group("raw (a headerless grid)")
    grid.add_argument("--dims", type=Integer(1, 1 << 20, "points"), nargs=3, metavar=("X", "Y", "Z"),
                      help="raw: points along x, y and z, values x fastest (default: from a name NAME_XxYxZ_TYPE.raw)")
    grid.add_argument("--dtype", type=Word(RAW_DTYPES), metavar="T",
                      help="raw: element type, little-endian unless <, > says (uint8, uint16, int16, float32, ..., >f4; "
                           "default: from the name)")
    grid.add_argument("--components", type=Integer(1, 64, "components"), metavar="C",
                      help="raw: values per point (default 1); npy, hdf5, zarr: a 4-D array whose last axis is C is a "
                           "(Z, Y, X, C) grid, not a time series")
    raw = parser.add_argument_group("raw-particles")
    split = raw.add_mutually_exclusive_group()
    split.add_argument("--particles-per-frame", type=Integer(1, 1 << 40, "particles"), metavar="N",
                       help="particles per frame (default: one frame)")
    split.add_argument("--frames", type=Integer(1, 1 << 20, "frames"), metavar="F",
                       help="number of equal frames the file holds (default: 1)")
    npy = parser.add_argument_group("npy")
    npy.add_argument("--field", type=Name(), help="npy, raw: field name (default: the file's stem)")
    hdf5 = parser.add_argument_group("hdf5, netcdf, zarr")
    hdf5.add_argument("--dataset", action="append", type=PathArgument(), metavar="PATTERN",
                      help="hdf5: the datasets of one field, one per frame, as a path pattern with * ? [...] "
                           "(density_*, /step_*/density); NAME=PATTERN names the field; repeat for more fields "
                           "(default: H5Part steps, the file's one dataset, or the one step pattern its datasets "
                           "fall into, said on stderr)")
    hdf5.add_argument("--variables", type=Items(Name(255)), metavar="NAMES",
                      help="netcdf: variables to convert (default: the numeric ones over time); zarr: arrays of "
                           "the group (default: those of two or more axes)")
    hdf5.add_argument("--time-dim", type=Name(255), metavar="DIM",
                      help="netcdf: the time dimension (default: 'time', the unlimited one or one marked axis T)")
    hdf5.add_argument("--time-axis", type=Integer(0, 31), metavar="N",
                      help="npy, hdf5, netcdf, zarr: the arrays' axis of time, one frame per index (default: an axis "
                           "named time; else npy, hdf5: axis 0 of (t, Z, Y, X) and (t, Z, Y, X, c) arrays, zarr: 0)")
    layout = parser.add_argument_group("flow layout (input: a flow container)")
    layout.add_argument("--layout", choices=("hilbert", "blocks"), help="rewrite the flow field in this layout")
    layout.add_argument("--block", type=Integer(1, 1 << 16, "points"), nargs=3, metavar=("BX", "BY", "BZ"),
                        help="--layout blocks: points a block holds along x, y and z (default 32 32 32); blocks at the "
                             "far edges are partial where they do not divide the grid")
    layout.add_argument("--hilbert-bits", type=Integer(1, 20), metavar="B",
                        help=f"--layout hilbert: partitions of 2^B points a side (default {HILBERT_BITS}: 64)")
    layout.add_argument("--chunk-pages", type=HILBERT_CHUNK_PAGES, metavar="P",
                        help=f"--layout hilbert: chunk size in 4 KiB pages (default {CHUNK_PAGES})")
    add_writer_arguments(parser)
    parser.set_defaults(func=run)


def _check_options(args: argparse.Namespace) -> None:
    """Options of one mode given in the other are a usage error, not silently ignored."""
    def given(*names: str) -> list[str]:
        return ["--" + name.replace("_", "-") for name in names if getattr(args, name) not in (None, False)]

    if args.layout is None:
        stray = given("block", "hilbert_bits", "chunk_pages")
        if stray:
            raise UsageError(f"{', '.join(stray)}: only with --layout")
        return
    stray = given("format", "particles_per_frame", "frames", "field", "dataset", "variables", "time_dim", "time_axis",
                  "dims", "dtype", "components", "chunk_size", "codec_level")
    stray += ["--codec"] if args.codec != "none" else []
    stray += given("hilbert_bits", "chunk_pages") if args.layout == "blocks" else given("block")
    if stray:
        raise UsageError(f"{', '.join(stray)}: not with --layout {args.layout} (a layout's chunks are uncompressed; "
                         "--chunk-pages sizes the Hilbert layout's)")


def run(args: argparse.Namespace) -> int:
    _check_options(args)
    options = writer_options(args)
    paths = resolve_inputs(args.inputs[0] if len(args.inputs) == 1 else args.inputs)
    check_output(paths, args.output)
    before = refuse_existing(args.output, args.force)
    started = time.perf_counter()
    try:
        if args.layout:
            return run_layout(args)
        with warnings.catch_warnings(record=True) as notes:
            warnings.simplefilter("always", ConversionNote)
            source = open_source(paths, args.format, particles_per_frame=args.particles_per_frame, frames=args.frames,
                                 field=args.field, dataset=args.dataset, variables=args.variables,
                                 time_dim=args.time_dim, time_axis=args.time_axis, dims=args.dims, dtype=args.dtype,
                                 components=args.components)
        for note in notes:  # what was chosen without an option, once each; other warnings as Python shows them
            if issubclass(note.category, ConversionNote):
                print(f"headrace convert: {note.message}", file=sys.stderr)
            else:
                warnings.showwarning(note.message, note.category, note.filename, note.lineno)
        with terminate_as_exit(), byte_progress(f"converting {source.path.name}", source.total_bytes,
                                                enabled=not args.json) as update:
            write_source(source, args.output, progress=update, **options)
        summary = container_summary(Path(args.output), time.perf_counter() - started, input=[str(p) for p in paths],
                                    format=source.attributes.get("source_format"))
    except KeyboardInterrupt:
        return interrupted("convert", args.output, before)
    print_summary(summary, args.json)
    return 0


def run_layout(args: argparse.Namespace) -> int:
    if len(args.inputs) != 1:
        raise UsageError("--layout rewrites one flow container")
    bits = args.hilbert_bits  # None: the default, or the largest partition a small grid takes (said)
    chunk_pages = CHUNK_PAGES if args.chunk_pages is None else args.chunk_pages
    source_layout = headrace.open(args.inputs[0]).attributes.get("layout")

    def say(text: str) -> None:
        print(f"headrace convert: {text}", file=sys.stderr)

    with terminate_as_exit():
        if source_layout == "blocks" and args.layout == "hilbert":
            seconds = streamlines.convert_to_hilbert(args.inputs[0], args.output, bits=bits, chunk_pages=chunk_pages,
                                                     say=say)
        elif source_layout == "linear":
            seconds = streamlines.convert_linear_flow(args.inputs[0], args.output, layout=args.layout, block=args.block,
                                                      bits=bits, chunk_pages=chunk_pages, say=say)
        else:
            raise UsageError(f"{args.inputs[0]}: layout {source_layout!r} cannot become {args.layout} "
                             "(native blocks become hilbert; a grid in grid order becomes either)")
    written = headrace.open(args.output).attributes
    details = dict(hilbert_bits=int(written["hilbert_bits"][0]), chunk_pages=chunk_pages) if args.layout == "hilbert" \
        else dict(block=list(written["block_dims"]))
    summary = container_summary(Path(args.output), seconds, input=args.inputs, layout=args.layout, **details)
    print_summary(summary, args.json)
    if not args.json:
        console.print(f"construction time of the {args.layout} layout: {seconds:.3f} s")
    return 0
