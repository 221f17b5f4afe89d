"""``headrace bench streamlines NATIVE.hrc HILBERT.hrc --study S --out RESULTS.csv``: seed 002's studies;
``headrace bench particles FILE [--grid | --sample N] --out RESULTS.csv``: seed 000's.

Studies: io (standard vs direct I/O over chunk sizes), banks, madvise, concurrency (chunk size and
threads against hilbert-mmap), scaling (the four implementations, strong and weak, 1 to 64 threads),
gpu (the GPU tracer against the CPU implementations on the same seeds);
``docs/streamlines.md`` says what each varies. Every point is measured cold (the files' pages dropped
before each repeat). Finished rows are kept after each point, so an interrupted run resumes where it
stopped when run again with the same --out. ``headrace plot RESULTS.csv`` draws them.

particles: every configuration of the factor space (``--grid``) or ``--sample N`` of it drawn from
per-factor distributions, each rendered frame after frame (round robin) through headrace's streaming
renderer and measured by seed 000's algorithm 3 (docs/particles.md): pre-warm frames, the frame count
that fills ``--wall-seconds``, draw times per frame (min, median, max), wall time per frame, segment
waits. One row per configuration with the machine it ran on, in CSV and JSON; ``--budget`` seconds
stops starting new ones; a configuration that cannot run (no GPU for vram, cuFile here) is a row
saying why.
"""

from __future__ import annotations

import argparse

from headrace.bench.cases.streamlines import STUDIES
from headrace.cli._arguments import choose_device, parse_size
from headrace.errors import UsageError

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
    sl.add_argument("--scalings", default="strong,weak", help="the scaling study's halves (default strong,weak)")
    sl.add_argument("--repeats", type=int, default=1)
    sl.add_argument("--out", required=True, metavar="RESULTS.csv")
    sl.set_defaults(func=run)

    pa = kinds.add_parser("particles", help="seed 000's streaming-method study (algorithm 3)")
    pa.add_argument("file", metavar="FILE", help="a particle container (headrace generate particles)")
    space = pa.add_mutually_exclusive_group()
    space.add_argument("--grid", action="store_true", help="every combination of the levels (the default)")
    space.add_argument("--sample", type=int, metavar="N", help="N configurations drawn from per-factor distributions")
    pa.add_argument("--methods", default=None, help="comma-separated (default: every method this device can run)")
    pa.add_argument("--batches", default="128000,500000,1000000", help="particles per batch")
    pa.add_argument("--segments", default="2,4,16,64,256", help="batches in flight")
    pa.add_argument("--staging", default="256M", help="staging sizes, comma-separated (default 256M)")
    pa.add_argument("--device", default=None, help="GPU ordinal, or cpu (default: 0 when a GPU is there)")
    pa.add_argument("--cache", choices=("hot", "cold"), default="hot", help="page cache state of phase 3")
    pa.add_argument("--wall-seconds", type=float, default=2.0, help="algorithm 3's T_w (default 2)")
    pa.add_argument("--prewarm", type=int, default=4, help="algorithm 3's R_p (default 4)")
    pa.add_argument("--gpu-iterations", type=int, default=8, help="algorithm 3's R_g (default 8)")
    pa.add_argument("--width", type=int, default=1024)
    pa.add_argument("--height", type=int, default=768)
    pa.add_argument("--budget", type=float, default=None, help="seconds after which no new configuration starts")
    pa.add_argument("--seed", type=int, default=0, help="--sample's random seed")
    pa.add_argument("--series", action="store_true",
                    help="each frame loads the next one's first batches while it is drawn (hot only; "
                         "the KvikIO peer renders frame by frame, so it has no series rows)")
    pa.add_argument("--overlap", action="store_true",
                    help="also stream each configuration's frames without drawing: frame time over max(streaming "
                         "alone, drawing alone) (seed 000's overlap)")
    pa.add_argument("--out", required=True, metavar="RESULTS.csv", help="rows (and RESULTS.json beside it)")
    pa.set_defaults(func=run_particles)


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
                              chunk_pages=tuple(int(p) for p in args.chunk_pages.split(",")), unit_pages=args.unit_pages,
                              scalings=tuple(s for s in args.scalings.split(",") if s))
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


def particle_methods(device: int | str) -> tuple[str, ...]:
    """Every method the device can run on this file kind (vram, ram-pinned and cufile need a GPU)."""
    from headrace.render import GPU_METHODS, METHODS

    plain = tuple(m for m in METHODS if not m.startswith("compressed-"))
    return plain if device != "cpu" else tuple(m for m in plain if m not in GPU_METHODS)


def particle_device(device: str | None, doing: str) -> int | str:
    """The GPU ordinal or "cpu" of --device; without one, GPU 0 when there is one, else the CPU, said once."""
    return choose_device(device, f"{doing} the CPU reference renderer")


def particle_space(args: argparse.Namespace, device: int | str, codecs: list[str]):
    """The factor space of --methods (default: every method the device runs on this kind of file),
    --batches, --segments and --staging."""
    from headrace.bench.cases import particles as study
    from headrace.render import METHODS

    methods = tuple(args.methods.split(",")) if args.methods else (
        particle_methods(device) if codecs == ["none"] else tuple(f"compressed-{c}" for c in codecs))
    unknown = [m for m in methods if m not in METHODS and m != "kvikio"]
    if unknown:
        raise UsageError(f"--methods: unknown {', '.join(unknown)}; expected some of {', '.join(METHODS)}, kvikio")
    return study.Space(methods=methods, batches=tuple(int(b) for b in args.batches.split(",")),
                       segments=tuple(int(s) for s in args.segments.split(",")),
                       staging_bytes=tuple(parse_size(s) for s in args.staging.split(",")))


def run_particles(args: argparse.Namespace) -> int:
    import json
    import time
    from pathlib import Path

    import headrace
    from headrace.bench.cases import particles as study
    from headrace.bench.harness import read_rows, write_rows
    from headrace.cli._output import console, count_progress
    if args.series and args.cache == "cold":
        raise UsageError("--series loads the next frame ahead, before a cold run drops its pages: use it hot")
    device = particle_device(args.device, "measuring")
    ds = headrace.open(args.file)
    space = particle_space(args, device, ds.codecs)
    configurations = list(study.sample(space, args.sample, args.seed) if args.sample else study.grid(space))
    rows: list[dict[str, object]] = list(read_rows(args.out))
    common = {"file": str(Path(args.file).resolve()), "device": str(device), "cache": args.cache, "series": args.series,
              "design": f"sample of {args.sample}, seed {args.seed}" if args.sample else "grid"}
    done = {tuple(str(row.get(k, "")) for k in study.KEY) for row in rows}
    todo = [c for c in configurations if tuple(str({**common, **c}[k]) for k in study.KEY) not in done]
    if len(todo) < len(configurations):
        console.print(f"resuming: {len(configurations) - len(todo)} of {len(configurations)} configurations already in {args.out}")
    machine = study.machine()
    frames = list(range(len(ds.frames)))
    started = time.monotonic()
    with count_progress("particles study", len(todo)) as advance:
        for config in todo:
            if args.budget is not None and time.monotonic() - started > args.budget:
                console.print(f"budget of {args.budget:g} s spent: {len(rows)} rows, the rest left for a later run")
                break
            row: dict[str, object] = {**common, **config, **machine}
            try:
                if config["method"] == "kvikio":  # the peer: KvikIO into CuPy, drawn by our renderer
                    if device == "cpu":
                        raise UsageError("the kvikio peer reads into GPU memory: it needs a GPU")
                    if args.series:
                        raise UsageError("the kvikio peer renders frame by frame: no series")
                    renderer = study.kvikio_renderer(ds, device=int(device), batch=config["batch"], width=args.width,
                                                     height=args.height)
                else:
                    renderer = study.renderer_for(ds, config, device=device, width=args.width, height=args.height)
                result = study.algorithm3(renderer, frames, cache=args.cache, prewarm=args.prewarm,
                                          wall_seconds=args.wall_seconds, gpu_iterations=args.gpu_iterations,
                                          series=args.series)
                row.update(result.row())
                row["describe"] = renderer.describe()
                if args.overlap and config["method"] not in study.BASELINES:
                    drawn, alone = study.overlap_seconds(renderer, frames, result.wall_frames, args.cache,
                                                         series=args.series)
                    row.update(overlap_frame_s=drawn, stream_only_s=alone)
                    row["overlap_ratio"] = drawn / max(alone, row["draw_median_s"])
            except headrace.errors.Error as why:  # said in the row, never dropped
                row["error"] = str(why)
            rows.append(row)
            write_rows(args.out, rows)  # kept after every configuration: an interruption loses at most one
            Path(args.out).with_suffix(".json").write_text(json.dumps(rows, indent=2, default=str))
            advance()
    measured = [r for r in rows if not r.get("error")]
    console.print(f"particles: {len(rows)} rows in {args.out} ({len(rows) - len(measured)} could not run)")
    return 0
