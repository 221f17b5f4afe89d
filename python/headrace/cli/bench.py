"""``headrace bench streamlines NATIVE.hrc HILBERT.hrc --study S --out RESULTS.csv``: seed 002's studies.

Studies: io (standard vs direct I/O over chunk sizes), banks, madvise, concurrency (chunk size and
threads against hilbert-mmap), scaling (the four implementations, strong and weak, 1 to 64 threads),
gpu (the GPU tracer against the CPU implementations on the same seeds);
``docs/streamlines.md`` says what each varies. Every point is measured cold (the files' pages dropped
before each repeat). Finished rows are kept after each point, so an interrupted run resumes where it
stopped when run again with the same --out. ``headrace plot RESULTS.csv`` draws them.
"""

from __future__ import annotations

import argparse

from headrace.bench.cases.streamlines import STUDIES
from headrace.cli._arguments import parse_size

__all__ = ["register", "run"]

# What makes two rows the same point of a study (a resumed run skips points already measured).
KEY = ("study", "implementation", "scaling", "threads", "direct", "unit_pages", "banks", "madvise_interval_s", "seeds")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("bench", help="benchmark studies (streamlines: seed 002's experiments)",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND")
    sl = kinds.add_parser("streamlines", help="seed 002's data-management studies")
    sl.add_argument("native", metavar="NATIVE.hrc", help="the flow field in native blocks")
    sl.add_argument("hilbert", metavar="HILBERT.hrc", help="the same field in the Hilbert layout")
    sl.add_argument("--study", choices=STUDIES, required=True)
    sl.add_argument("--seeds", default="uniform:512", help="as for headrace trace (default uniform:512)")
    sl.add_argument("--steps", type=int, default=1000)
    sl.add_argument("--step-size", type=float, default=0.01)
    sl.add_argument("--cache-bytes", type=parse_size, default=256 << 20, help="user-managed cache (default 256M)")
    sl.add_argument("--threads", default="1,2,4,8,16,32,64", help="thread counts (default 1,2,4,8,16,32,64)")
    sl.add_argument("--chunk-pages", default="3,12,48,96,384,1536", help="Hilbert unit sizes in pages")
    sl.add_argument("--unit-pages", type=int, default=96, help="the scaling study's Hilbert unit (default 96 pages)")
    sl.add_argument("--repeats", type=int, default=1)
    sl.add_argument("--out", required=True, metavar="RESULTS.csv")
    sl.set_defaults(func=run)


def _key(row: dict[str, object]) -> tuple[str, ...]:
    return tuple(str(row.get(name, "")) for name in KEY)


def run(args: argparse.Namespace) -> int:
    from headrace.bench.cases import streamlines as study_cases
    from headrace.bench.harness import read_rows, write_rows
    from headrace.cli._output import console, count_progress
    from headrace.cli.trace import parse_seeds

    setup = study_cases.Setup(native=args.native, hilbert=args.hilbert, seeds=parse_seeds(args.seeds, args.native),
                              steps=args.steps, step_size=args.step_size, cache_bytes=args.cache_bytes,
                              threads=tuple(int(t) for t in args.threads.split(",")),
                              chunk_pages=tuple(int(p) for p in args.chunk_pages.split(",")), unit_pages=args.unit_pages)
    rows: list[dict[str, object]] = list(read_rows(args.out))
    done = {_key(row) for row in rows}
    points = list(study_cases.configurations(args.study, setup))
    todo = [p for p in points if _key({"study": args.study, "seeds": len(setup.seeds) * p.get("seed_factor", 1),
                                       "scaling": p.get("scaling", ""), **p}) not in done]
    if len(todo) < len(points):
        console.print(f"resuming: {len(points) - len(todo)} of {len(points)} points already in {args.out}")
    with count_progress(f"{args.study} study", len(todo)) as advance:
        for options in todo:
            measured = study_cases.run_configuration(args.study, setup, options, args.repeats)
            rows.append(measured.as_row())
            write_rows(args.out, rows)  # kept after every point: Ctrl-C loses at most the one running
            advance()
    console.print(f"{args.study}: {len(points)} points in {args.out}")
    return 0
