"""Measures how fast headrace streams on this machine, one configuration at a time, into a results
file of one row per configuration (``headrace plot RESULTS.csv`` draws it).

    headrace bench particles FILE [--grid | --sample N] --out RESULTS.csv
        the particle renderer's streaming methods on a particle file
    headrace bench streamlines NATIVE.hrc HILBERT.hrc --study S --out RESULTS.csv
        the streamline tracer's data managers on a flow field
    headrace bench scaling FILE... [--ranks 1,2,4,8] --out DIR
        streaming and rendering over several MPI ranks
    headrace bench pathlines SERIES [--seeds N] [--device D] --out DIR
        pathlines through a flow series against the engine streaming its frames

``headrace bench KIND --help`` says what each measures. Finished rows are kept after each one, so an
interrupted run (or one stopped by ``--budget``) resumes where it stopped when run again with the same
``--out``.

Where this comes from: the particle study repeats on Linux the measurements of Müller and Ertl,
"Quantifying Performance Gains of DirectStorage for the Visualisation of Time-Dependent Particle Data
Sets"; the streamline studies those of Jiang, Van Essen, Harrison and Gokhale, "Multi-Threaded
Streamline Tracing for Data-Intensive Architectures" (docs/particles.md, docs/streamlines.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import headrace
from headrace._files import read_rows, replacing, write_rows
from headrace.bench.cases import particles as study, pathlines, scaling, streamlines as study_cases
from headrace.workloads.compositing import COMPOSITING
from headrace.bench.cases.streamlines import STUDIES
from headrace.cli._output import console, count_progress
from headrace.cli._particles import add_particle_space_arguments, expect_particle_container, particle_space
from headrace.cli._seeds import MOST_STEPS, UNIT_PAGES, Seeds, expect_memory_for_lines, parse_seeds
from headrace.cli._shared import (
    Budget,
    Device,
    Integer,
    Items,
    OutputFile,
    Path as PathArgument,
    Real,
    Size,
    Word,
    add_budget_argument,
    cache_help,
    cache_said,
    expect_cache_state,
    particle_device,
)
from headrace.errors import Error, UsageError
from headrace.page_cache import CACHE_STATES
from headrace.tuning import grid, machine, sample

__all__ = ["register", "run", "run_particles", "run_scaling", "run_pathlines", "PARTICLES_DOC", "STREAMLINES_DOC"]


PARTICLES_DOC = """Measures each way the particle renderer can stream a particle file: every configuration of method,
particles per batch, batches in flight and staging (``--grid``, the default), or ``--sample N`` of them
drawn from per-factor distributions.

Each configuration renders the file's frames one after the other (round robin) through headrace's
streaming renderer and is timed in three phases (docs/particles.md): ``--prewarm`` frames before the
timing, which also find the frame count that fills ``--wall-seconds``; ``--gpu-iterations`` frames whose
draw time is measured (min, median, max); then that many frames, whose wall time per frame is the
result, with the waits for a free segment. Without ``--methods`` every method this device can run here
on this kind of file is measured, ``auto`` (the engine's read path) among them; a method this machine
cannot run (cuFile or io_uring missing, a GPU method on the CPU) is left out, the reason said. One row
per configuration with the machine it ran on, in CSV and JSON; ``--budget`` seconds stops starting new
ones. A configuration that cannot run (a staging too small for a batch) is a row saying why, and the
command then exits 1 naming how many and the first reason. Each configuration takes at least twice
``--wall-seconds`` (four times with ``--overlap``) and at least ``--prewarm`` + ``--gpu-iterations`` + 1
frames: on the CPU reference renderer, at 1024 x 768, minutes (``--sample 40`` ran about 100 minutes on
a 2-core machine). The run says its estimate at the start and after the first configuration.

Where this comes from: the methods, the factors and the three-phase timing are those of Müller and
Ertl, "Quantifying Performance Gains of DirectStorage for the Visualisation of Time-Dependent Particle
Data Sets", on Linux (docs/particles.md).
"""

STREAMLINES_DOC = """Measures the streamline tracer's data managers on one flow field stored twice (in native blocks and in
the Hilbert layout, ``headrace convert --layout``), one ``--study`` at a time.

Studies: io (standard vs direct I/O over chunk sizes), banks, madvise, concurrency (chunk size and
threads against hilbert-mmap), scaling (the four implementations, strong and weak, 1 to 64 threads),
gpu (the GPU tracer against the CPU implementations on the same seeds); docs/streamlines.md says what
each varies. Every point is measured ``--cache cold`` by default (the two files' pages evicted before
each repeat; ``drop-all`` drops the whole machine's page cache instead, as root). Finished rows are kept
after each point, so an interrupted run (or one stopped by ``--budget``) resumes where it stopped when
run again with the same --out. ``headrace plot RESULTS.csv`` draws them.

Where this comes from: the studies of Jiang, Van Essen, Harrison and Gokhale, "Multi-Threaded
Streamline Tracing for Data-Intensive Architectures", run on headrace's tracer (docs/streamlines.md).
"""

# What makes two rows the same point of a study (a resumed run skips points already measured).
KEY = ("study", "cache", "implementation", "scaling", "threads", "direct", "unit_pages", "banks", "madvise_interval_s",
       "seeds")


def register(subparsers: argparse._SubParsersAction, summary: str) -> None:
    parser = subparsers.add_parser("bench", help=summary,
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    kinds = parser.add_subparsers(dest="kind", required=True, metavar="KIND")
    sl = kinds.add_parser("streamlines", help="the streamline tracer's data managers, one study at a time",
                          description=STREAMLINES_DOC, formatter_class=argparse.RawDescriptionHelpFormatter)
    sl.add_argument("native", metavar="NATIVE.hrc", type=PathArgument(), help="the flow field in native blocks")
    sl.add_argument("hilbert", metavar="HILBERT.hrc", type=PathArgument(), help="the same field in the Hilbert layout")
    sl.add_argument("--study", choices=STUDIES, required=True, help="which study (docs/streamlines.md)")
    sl.add_argument("--seeds", type=Seeds(), default="uniform:512", help="as for headrace trace (default uniform:512)")
    sl.add_argument("--steps", type=Integer(1, MOST_STEPS, "steps"), default=1000, help="steps per line (default 1000)")
    sl.add_argument("--step-size", type=Real(0, 1e6, above=True), default=0.01,
                    help="in the field's time units (default 0.01)")
    sl.add_argument("--cache-bytes", type=Size(4096, 1 << 40), default=256 << 20,
                    help="the user-managed cache, and mmap's page-cache budget (default 256M)")
    sl.add_argument("--threads", type=Items(Integer(1, 1024)), default="1,2,4,8,16,32,64",
                    help="thread counts (default 1,2,4,8,16,32,64)")
    sl.add_argument("--chunk-pages", type=Items(UNIT_PAGES), default="3,12,48,96,384,1536",
                    help="Hilbert unit sizes in pages (default 3,12,48,96,384,1536)")
    sl.add_argument("--unit-pages", type=UNIT_PAGES, default=96, help="the scaling study's Hilbert unit (default 96 pages)")
    sl.add_argument("--scalings", type=Items(Word(("strong", "weak")), most_items=2), default="strong,weak",
                    help="the scaling study's halves (default strong,weak)")
    sl.add_argument("--repeats", type=Integer(1, 100), default=1, help="timed repeats per point (default 1)")
    sl.add_argument("--cache", choices=CACHE_STATES, default="cold", help=cache_help("cold", "every repeat"))
    add_budget_argument(sl, "seconds after which no new point starts (the rest is left for a resumed run)")
    sl.add_argument("--out", required=True, type=OutputFile((".csv",)), metavar="RESULTS.csv",
                    help="the rows; an existing file is resumed")
    sl.set_defaults(func=run)

    pa = kinds.add_parser("particles", help="each way the particle renderer streams a file, timed frame by frame",
                          description=PARTICLES_DOC, formatter_class=argparse.RawDescriptionHelpFormatter)
    pa.add_argument("file", metavar="FILE", type=PathArgument(), help="a particle container (headrace generate particles)")
    space = pa.add_mutually_exclusive_group()
    space.add_argument("--grid", action="store_true", help="every combination of the levels (the default)")
    space.add_argument("--sample", type=Integer(1, 10_000, "configurations"), metavar="N",
                       help="N configurations drawn from per-factor distributions (each takes at least 2 x "
                            "--wall-seconds; on the CPU renderer minutes: --sample 40 ran about 100 minutes on 2 cores)")
    add_particle_space_arguments(pa, staging="256M")
    pa.add_argument("--cache", choices=CACHE_STATES, default="hot", help=cache_help("hot", "the timed frames"))
    pa.add_argument("--wall-seconds", type=Real(0, 3600, "seconds", above=True), default=2.0,
                    help="frames are timed until they fill this many seconds (default 2)")
    pa.add_argument("--prewarm", type=Integer(1, 1000, "frames"), default=4,
                    help="frames rendered before the timing (default 4)")
    pa.add_argument("--gpu-iterations", type=Integer(1, 1000, "frames"), default=8,
                    help="frames whose draw time is measured (default 8)")
    pa.add_argument("--width", type=Integer(1, 16384, "pixels"), default=1024, help="image width (default 1024)")
    pa.add_argument("--height", type=Integer(1, 16384, "pixels"), default=768, help="image height (default 768)")
    add_budget_argument(pa, "seconds after which no new configuration starts (the rest is left for a resumed run)")
    pa.add_argument("--seed", type=Integer(0, (1 << 32) - 1), default=0, help="--sample's random seed (default 0)")
    pa.add_argument("--series", action="store_true",
                    help="each frame loads the next one's first batches while it is drawn (hot only; "
                         "the KvikIO peer renders frame by frame, so it has no series rows)")
    pa.add_argument("--overlap", action="store_true",
                    help="also stream each configuration's frames without drawing: frame time over max(streaming "
                         "alone, drawing alone)")
    pa.add_argument("--out", required=True, type=OutputFile((".csv",)), metavar="RESULTS.csv",
                    help="rows (and RESULTS.json beside them); an existing file is resumed")
    pa.set_defaults(func=run_particles)

    sc = kinds.add_parser("scaling", help="headrace over 1, 2, 4, 8 ranks (MPI): GB/s, frames/s, compositing",
                          description=scaling.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sc.add_argument("files", metavar="FILE", nargs="+", type=PathArgument(),
                    help="containers: each is streamed and rendered (sort-last); a volume is also played")
    sc.add_argument("--ranks", type=Items(Integer(1, 4096, "ranks")), default="1,2,4,8",
                    help="job sizes, comma-separated (default 1,2,4,8)")
    sc.add_argument("--device", type=Device(), default=None,
                    help="GPU d for the first rank of a node, d + local rank for the others (default: GPU 0 when there is "
                         "one, else the CPU, said once)")
    sc.add_argument("--cache", type=Items(Word(CACHE_STATES)), default="hot,cold",
                    help="the stream's cache states, comma-separated (hot, cold, drop-all; default hot,cold); "
                         "render and play run hot")
    sc.add_argument("--frames", type=Integer(1, 10_000, "frames"), default=4, help="frames each render job draws (default 4)")
    sc.add_argument("--workloads", type=Items(Word(scaling.WORKLOADS)), default=",".join(scaling.WORKLOADS),
                    help=f"what to measure, comma-separated (default all: {','.join(scaling.WORKLOADS)})")
    sc.add_argument("--play-loops", type=Integer(1, 1000), default=1, dest="play_loops",
                    help="times each rank plays its block of a volume's frames (default 1)")
    sc.add_argument("--compositing", type=Items(Word(COMPOSITING)), default="auto",
                    help="sort-last compositing measured, comma-separated: auto (the GPUs over NCCL where they can), gpu, "
                         "host (through host memory over MPI) (default auto)")
    sc.add_argument("--hot-bytes", type=Size(1, 1 << 50), default=8 << 30,
                    help="bytes a hot stream job delivers: the series played again until then (default 8G)")
    sc.add_argument("--repeats", type=Integer(1, 100), default=3, help="jobs per point; the median counts (default 3)")
    sc.add_argument("--width", type=Integer(1, 16384, "pixels"), default=1024, help="image width (default 1024)")
    sc.add_argument("--height", type=Integer(1, 16384, "pixels"), default=768, help="image height (default 768)")
    sc.add_argument("--out", required=True, type=PathArgument(), metavar="DIR",
                    help="folder for scaling.json, scaling.csv and scaling.png (made if missing)")
    sc.set_defaults(func=run_scaling)

    pl = kinds.add_parser("pathlines", help="pathlines through a flow series against the engine streaming its frames",
                          description=pathlines.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    pl.add_argument("file", metavar="SERIES", type=PathArgument(), help="a flow series (headrace generate flow --frames F)")
    pl.add_argument("--seeds", type=Integer(1, 1 << 30, "seeds"), default=1_000_000,
                    help="pathlines, on a lattice over the grid (default 1,000,000)")
    pl.add_argument("--step-size", type=Real(0, 1e6, above=True), default=0.05, help="in the series' time units (default 0.05)")
    pl.add_argument("--device", type=Device(), default=None, help="where to trace (default: GPU 0 when there is one, else the CPU)")
    pl.add_argument("--cache", type=Items(Word(("hot", "cold"))), default="hot", help="hot, cold or both (default hot)")
    pl.add_argument("--rounds", type=Integer(1, 100), default=3, help="rounds of the three passes; medians count (default 3)")
    pl.add_argument("--disk-gbps", type=Real(0, 1e4, above=True), default=None,
                    help="the disk's ceiling for the cold yardstick (default: the engine's cold rate of the round)")
    pl.add_argument("--out", required=True, type=PathArgument(), metavar="DIR", help="folder for pathlines.json and .csv")
    pl.set_defaults(func=run_pathlines)


def run_scaling(args: argparse.Namespace) -> int:
    device = particle_device(args.device, "running every rank on")
    if Path(args.out).exists() and not Path(args.out).is_dir():
        raise UsageError(f"--out {args.out}: a file, not a folder")
    for cache in args.cache:
        expect_cache_state(cache, list(args.files))
    result = scaling.run_study(list(args.files), sorted(set(args.ranks)), str(device), list(dict.fromkeys(args.cache)),
                               args.frames, args.repeats, args.width, args.height, hot_bytes=args.hot_bytes,
                               say=console.print, compositing=tuple(dict.fromkeys(args.compositing)),
                               workloads=tuple(dict.fromkeys(args.workloads)), play_loops=args.play_loops)
    written = scaling.write(result, Path(args.out))
    if result["gpus"] < max(args.ranks) and device != "cpu":
        console.print(f"this machine has {result['gpus']} GPU(s): ranks beyond them shared GPUs, so these numbers say "
                      "nothing about more GPUs")
    console.print("wrote " + ", ".join(str(p) for p in written))
    return 0


def run_pathlines(args: argparse.Namespace) -> int:
    device = particle_device(args.device, "tracing on")
    words = [str(args.file), "--seeds", str(args.seeds), "--step-size", str(args.step_size), "--device", str(device),
             "--cache", ",".join(dict.fromkeys(args.cache)), "--rounds", str(args.rounds), "--out", str(args.out)]
    if "cold" in args.cache:
        expect_cache_state("cold", [args.file])
    return pathlines.main(words + (["--disk-gbps", str(args.disk_gbps)] if args.disk_gbps else []))


def _key(row: dict[str, object]) -> tuple[str, ...]:
    return tuple(str(row.get(name, "")) for name in KEY)


def run(args: argparse.Namespace) -> int:
    seeds = parse_seeds(args.seeds, args.native)
    weak = args.study == "scaling" and "weak" in args.scalings  # weak scaling multiplies the seeds by the threads
    expect_memory_for_lines(len(seeds) * (max(args.threads) if weak else 1), args.steps, "forward")
    setup = study_cases.Setup(native=args.native, hilbert=args.hilbert, seeds=seeds,
                              steps=args.steps, step_size=args.step_size, cache_bytes=args.cache_bytes,
                              threads=tuple(args.threads), chunk_pages=tuple(args.chunk_pages), unit_pages=args.unit_pages,
                              scalings=tuple(dict.fromkeys(args.scalings)))
    expect_cache_state(args.cache, [args.native, args.hilbert])
    rows: list[dict[str, object]] = [dict(row) for row in read_rows(args.out)]
    done = {_key(row) for row in rows}
    points = list(study_cases.configurations(args.study, setup))
    todo = [p for p in points if _key({"study": args.study, "cache": args.cache, "scaling": p.get("scaling", ""),
                                       "seeds": len(setup.seeds) * p.get("seed_factor", 1), **p}) not in done]
    if len(todo) < len(points):
        console.print(f"resuming: {len(points) - len(todo)} of {len(points)} points already in {args.out}")
    console.print(f"{args.study}: {len(todo)} points, {args.repeats} repeat{'s' if args.repeats > 1 else ''} each, "
                  f"{cache_said(args.cache)}")
    budget, measured = Budget(args.budget), 0
    with count_progress(f"{args.study} study", len(todo)) as advance:
        for options in todo:
            if budget.spent(measured):
                console.print(budget.said(measured, len(todo), "points measured") +
                              ", the rest left for a later run with the same --out")
                break
            point = study_cases.run_configuration(args.study, setup, options, args.repeats, cache=args.cache)
            rows.append(point.as_row())
            write_rows(args.out, rows)  # kept after every point: Ctrl-C loses at most the one running
            measured += 1
            advance()
    console.print(f"{args.study}: {len(rows)} points in {args.out}")
    return 0


def _duration(seconds: float) -> str:
    return f"{seconds:.2g} s" if seconds < 120 else f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def run_particles(args: argparse.Namespace) -> int:
    if args.series and args.cache != "hot":
        raise UsageError("--series loads the next frame ahead, before a cold run drops its pages: use it hot (--cache hot)")
    device = particle_device(args.device, "measuring")
    ds = headrace.open(args.file)
    expect_particle_container(ds)
    space = particle_space(args, device, ds.codecs, ds.path, say=console.print)
    expect_cache_state(args.cache, [ds.path])
    configurations = list(sample(space, args.sample, args.seed) if args.sample else grid(space))
    rows: list[dict[str, object]] = [dict(row) for row in read_rows(args.out)]
    common = {"file": str(Path(args.file).resolve()), "device": str(device), "cache": args.cache, "series": args.series,
              "design": f"sample of {args.sample}, seed {args.seed}" if args.sample else "grid"}
    done = {tuple(str(row.get(k, "")) for k in study.KEY) for row in rows}
    todo = [c for c in configurations if tuple(str({**common, **c}[k]) for k in study.KEY) not in done]
    if len(todo) < len(configurations):
        console.print(f"resuming: {len(configurations) - len(todo)} of {len(configurations)} configurations already in {args.out}")
    least = (4 if args.overlap else 2) * args.wall_seconds  # phases 1 and 3 fill the wall time, the overlap twice more
    where = "the CPU" if device == "cpu" else f"GPU {device}"
    console.print(f"particles: {len(todo)} configuration{'s' if len(todo) != 1 else ''} on {where}, "
                  f"{cache_said(args.cache)}; each at least {least:g} s and {args.prewarm + args.gpu_iterations + 1} "
                  f"frames: at least {_duration(least * len(todo))} in all"
                  + (f", --budget {args.budget:g} s" if args.budget else ""))
    measured_on = machine()
    frames = list(range(len(ds.frames)))
    counts = [ds.element_count(f, "particles") for f in frames]
    # The overlap of streaming and drawing, over the frames that hold particles: an empty frame has neither.
    busy = [f for f, n in zip(frames, counts) if n] or frames
    budget = Budget(args.budget)
    failed: list[str] = []
    measured = 0  # configurations run now, those that could not included
    with count_progress("particles study", len(todo)) as advance:
        for config in todo:
            if budget.spent(measured):
                console.print(budget.said(measured, len(todo), "configurations measured") +
                              ", the rest left for a later run with the same --out")
                break
            row: dict[str, object] = {**common, **config, **measured_on}
            try:
                if config["method"] == "kvikio":  # the peer: KvikIO into CuPy, drawn by our renderer
                    if args.series:
                        raise UsageError("the kvikio peer renders frame by frame: no series")
                    renderer = study.kvikio_renderer(ds, device=int(device), batch=config["batch"], width=args.width,
                                                     height=args.height)
                else:
                    renderer = study.renderer_for(ds, config, device=device, width=args.width, height=args.height)
                result = study.algorithm3(renderer, frames, cache=args.cache, prewarm=args.prewarm,
                                          wall_seconds=args.wall_seconds, gpu_iterations=args.gpu_iterations,
                                          series=args.series, whole_series=len(set(counts)) > 1)
                timed = result.row()
                row.update(timed)
                row["describe"] = renderer.describe()
                if args.overlap and config["method"] not in study.BASELINES:
                    paired = study.overlap(renderer, busy, result.wall_frames, args.cache, series=args.series)
                    row.update(overlap_frame_s=paired.drawn_seconds, stream_only_s=paired.alone_seconds,
                               overlap_ratio=paired.ratio)
            except (Error, ImportError) as why:  # said in the row, never dropped
                row["error"] = f"{type(why).__name__}: {why}" if isinstance(why, ImportError) else str(why)
                failed.append(f"{config['method']}: {row['error']}")
            rows.append(row)
            write_rows(args.out, rows)  # kept after every configuration: an interruption loses at most one
            with replacing(Path(args.out).with_suffix(".json")) as partial:
                Path(partial).write_text(json.dumps(rows, indent=2, default=str))
            measured += 1
            if measured == 1 and len(todo) > 1:
                spent = time.monotonic() - budget.started
                console.print(f"  the first configuration took {spent:.1f} s: about {_duration(spent * (len(todo) - 1))} "
                              "for the rest")
            advance()
    console.print(f"particles: {len(rows)} rows in {args.out} ({measured} run now, {len(failed)} of them could not)")
    if failed:
        print(f"headrace bench particles: {len(failed)} of {measured} configurations could not run (their rows in "
              f"{args.out} say why); the first: {failed[0]}", file=sys.stderr)
        return 1
    return 0
