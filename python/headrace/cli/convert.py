"""``headrace convert IN OUT.hrc``: raw particles, MegaMol MMPLD, BOV or NumPy files into a container.

``headrace convert FLOW.hrc OUT.hrc --layout hilbert|blocks`` rewrites a flow field (float32 x 3) in
seed 002's Hilbert layout or in native blocks and reports the construction time (the paper's table 1).
From native blocks (``headrace generate flow``) the Hilbert layout is built partition by partition, out
of core; from a grid in grid order (a BOV brick converted first) one frame at a time in memory.

The input format is guessed from the extension or the first bytes unless ``--format`` names it. Several
inputs (BOV headers, .npy or .npz files; a directory; a quoted glob) become frames in order. A failed or
interrupted conversion leaves no output file. Mapping rules: docs/converters.md.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from headrace.cli._writer_options import (
    add_writer_arguments,
    container_summary,
    print_summary,
    terminate_as_exit,
    writer_options,
)

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("convert", help="convert particle or grid files into a container",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", nargs="+", metavar="IN",
                        help="input file(s), a directory or a quoted glob; several become frames in order")
    parser.add_argument("output", metavar="OUT.hrc", help="container to write")
    parser.add_argument("--format", choices=("raw-particles", "mmpld", "bov", "npy"),
                        help="input format (default: guessed from the extension or the first bytes)")
    raw = parser.add_argument_group("raw-particles")
    split = raw.add_mutually_exclusive_group()
    split.add_argument("--particles-per-frame", type=int, help="particles per frame (default: one frame)")
    split.add_argument("--frames", type=int, help="number of equal frames the file holds (default: 1)")
    npy = parser.add_argument_group("npy")
    npy.add_argument("--field", help="field name (default: the file's stem)")
    layout = parser.add_argument_group("flow layout (input: a flow container)")
    layout.add_argument("--layout", choices=("hilbert", "blocks"), help="rewrite the flow field in this layout")
    layout.add_argument("--block", type=int, nargs=3, metavar=("BX", "BY", "BZ"), help="blocks: points a block holds")
    layout.add_argument("--hilbert-bits", type=int, default=6, help="partitions of 2^B points a side (default 6: 64)")
    layout.add_argument("--chunk-pages", type=int, default=96, help="chunk size in 4 KiB pages, a multiple of 3 (default 96)")
    add_writer_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from headrace.cli._output import byte_progress, console
    from headrace.convert import check_output, open_source, write_source
    from headrace.convert.formats import resolve_inputs

    if args.layout:
        return run_layout(args)
    paths = resolve_inputs(args.inputs[0] if len(args.inputs) == 1 else args.inputs)
    check_output(paths, args.output)
    started = time.perf_counter()
    source = open_source(paths, args.format, particles_per_frame=args.particles_per_frame, frames=args.frames,
                         field=args.field)
    try:
        with terminate_as_exit(), byte_progress(f"converting {source.path.name}", source.total_bytes,
                                                enabled=not args.json) as update:
            write_source(source, args.output, progress=update, **writer_options(args))
    except KeyboardInterrupt:
        console.print(f"headrace convert: interrupted; {args.output} was not written")
        return 130
    summary = container_summary(Path(args.output), time.perf_counter() - started, input=[str(p) for p in paths],
                                format=source.attributes.get("source_format"))
    print_summary(summary, args.json)
    return 0


def run_layout(args: argparse.Namespace) -> int:
    from headrace import streamlines
    from headrace.cli._output import console
    from headrace.errors import UsageError

    import headrace

    if len(args.inputs) != 1:
        raise UsageError("--layout rewrites one flow container")
    source_layout = headrace.open(args.inputs[0]).attributes.get("layout")
    if source_layout == "blocks" and args.layout == "hilbert":
        seconds = streamlines.convert_to_hilbert(args.inputs[0], args.output, bits=args.hilbert_bits,
                                                 chunk_pages=args.chunk_pages)
    elif source_layout == "linear":
        seconds = streamlines.convert_linear_flow(args.inputs[0], args.output, layout=args.layout, block=args.block,
                                                  bits=args.hilbert_bits, chunk_pages=args.chunk_pages)
    else:
        raise UsageError(f"{args.inputs[0]}: layout {source_layout!r} cannot become {args.layout} "
                         "(native blocks become hilbert; a grid in grid order becomes either)")
    summary = container_summary(Path(args.output), seconds, input=args.inputs, layout=args.layout,
                                hilbert_bits=args.hilbert_bits, chunk_pages=args.chunk_pages)
    print_summary(summary, args.json)
    if not args.json:
        console.print(f"construction time (seed 002, table 1): {seconds:.3f} s")
    return 0
