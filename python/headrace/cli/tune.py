"""Finds this machine's fastest way to stream a particle file and stores it as the default of ``headrace
render`` and ``headrace stream``: the streaming method, particles per batch, batches in flight and
staging, searched within a time budget.

    headrace tune FILE [--budget SECONDS]

The search (``headrace.tuning``): random sampling of the configurations for the first half of the
budget, then refinement of the best (the next level up and down of each factor, and the other methods
at its factors) while that improves on it. Each configuration is timed as ``headrace bench particles``
times it, over ``--wall-seconds``; the defaults (``auto``, the engine's read path) are measured first, so
the result is never slower than they measured. Without ``--methods`` every method this device can run
here on this kind of file is searched; a method this machine cannot run is left out, the reason said.
The winner becomes this machine's profile: ``headrace render`` and ``headrace stream`` use it when their
options are not given. ``--compare-grid`` then measures every configuration of the (small) space and
says how far the tuned one is from the best. A configuration that cannot run is skipped and counted
(``--out`` keeps a row saying why); when none can, nothing is stored and the command exits 1 with the
first reason.

Where this comes from: Müller and Ertl, "Quantifying Performance Gains of DirectStorage for the
Visualisation of Time-Dependent Particle Data Sets", leave open which configuration is best on a given
machine; this finds it automatically (docs/particles.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time

import headrace
from headrace import tuning
from headrace._files import write_rows
from headrace.bench.cases import particles as study
from headrace.cli._output import console, count_progress
from headrace.cli._particles import add_particle_space_arguments, expect_particle_container, particle_space
from headrace.cli._shared import (
    Integer,
    OutputFile,
    Path as PathArgument,
    Real,
    add_budget_argument,
    cache_help,
    cache_said,
    expect_cache_state,
    particle_device,
)
from headrace.errors import Error, UsageError
from headrace.page_cache import CACHE_STATES

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction, summary: str) -> None:
    parser = subparsers.add_parser("tune", help=summary,
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", metavar="FILE", type=PathArgument(), help="a particle container (headrace generate particles)")
    add_budget_argument(parser, "seconds of searching (default 120; --compare-grid measures after it)", default=120.0)
    add_particle_space_arguments(parser, staging="64M,256M,1G")
    parser.add_argument("--cache", choices=CACHE_STATES, default="hot",
                        help=cache_help("hot", "each configuration's timed frames"))
    parser.add_argument("--wall-seconds", type=Real(0, 3600, "seconds", above=True), default=0.5,
                        help="each configuration's frames are timed until they fill this many seconds (default 0.5)")
    parser.add_argument("--width", type=Integer(1, 16384, "pixels"), default=1024, help="image width (default 1024)")
    parser.add_argument("--height", type=Integer(1, 16384, "pixels"), default=768, help="image height (default 768)")
    parser.add_argument("--seed", type=Integer(0, (1 << 32) - 1), default=0, help="the random sampling's seed (default 0)")
    parser.add_argument("--compare-grid", action="store_true",
                        help="also measure the whole space and report the tuned result against its best")
    parser.add_argument("--no-save", action="store_true", help="report only; keep the stored profile")
    parser.add_argument("--out", type=OutputFile((".csv",)), metavar="RESULTS.csv",
                        help="one row per configuration measured: its frame time, or why it could not run")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    device = particle_device(args.device, "tuning")
    ds = headrace.open(args.file)
    expect_particle_container(ds)
    codecs = ds.codecs
    if len(codecs) != 1:
        raise UsageError(f"{args.file}: chunks of several codecs ({', '.join(codecs)}); tune one kind of file")
    codec = codecs[0]
    baselines = [m for m in args.methods or () if m in study.BASELINES]  # neither streams through headrace
    if baselines:
        raise UsageError(f"--methods: {', '.join(baselines)} cannot be tuned (baselines, not ways to stream)")
    space = particle_space(args, device, codecs, ds.path, say=console.print)
    space = dataclasses.replace(space, methods=tuple(m for m in space.methods if m not in study.BASELINES))
    expect_cache_state(args.cache, [ds.path])
    frames = list(range(len(ds.frames)))
    # Frames of different sizes (empty ones, say): each configuration is timed over the whole series.
    whole_series = len({ds.element_count(f, "particles") for f in frames}) > 1

    def evaluate(config: dict) -> float:
        renderer = study.renderer_for(ds, config, device=device, width=args.width, height=args.height)
        result = study.algorithm3(renderer, frames, cache=args.cache, prewarm=2, wall_seconds=args.wall_seconds,
                                  gpu_iterations=2, whole_series=whole_series)
        return result.wall_seconds / result.wall_frames

    grid_size = len(list(tuning.grid(space)))
    console.print(f"tuning for {args.budget:g} s over {grid_size} configurations on "
                  f"{'the CPU' if device == 'cpu' else f'GPU {device}'}, {cache_said(args.cache)}"
                  + (f"; then --compare-grid measures the rest of the {grid_size}, each at least "
                     f"{2 * args.wall_seconds:g} s" if args.compare_grid else ""))
    default = tuning.default_configuration(device, codec)
    total = math.ceil(args.budget)
    started, shown = time.monotonic(), 0
    with count_progress("tuning (seconds of the budget)", total) as advance:
        def timed(config: dict) -> float:
            nonlocal shown
            try:
                return evaluate(config)
            finally:  # the bar follows the budget's seconds, whatever each configuration took
                spent = min(total, int(time.monotonic() - started))
                for _ in range(spent - shown):
                    advance()
                shown = max(shown, spent)

        try:
            result = tuning.tune(timed, space, args.budget, seed=args.seed, start_with=(default,))
            evaluations = list(result.evaluations)  # and --compare-grid's after them
        except tuning.NothingRan as nothing:
            evaluations, result = nothing.evaluations, None
    failed = [e for e in evaluations if "error" in e]
    grid_best: float | None = None  # --compare-grid: the best frame time over the whole space
    grid_measured = 0
    if result is not None and args.compare_grid:
        measured = {tuple(e[k] for k in ("method", *tuning.FACTORS)): e.get("frame_seconds", float("inf"))
                    for e in evaluations if e["method"] in space.methods and e["batch"] in space.batches
                    and e["segments"] in space.segments and e["staging_bytes"] in space.staging_bytes}
        rest = [c for c in tuning.grid(space) if tuple(c[k] for k in ("method", *tuning.FACTORS)) not in measured]
        with count_progress("the rest of the grid", len(rest)) as advance:
            for config in rest:
                key = tuple(config[k] for k in ("method", *tuning.FACTORS))
                try:
                    measured[key] = evaluate(config)
                    evaluations.append({**config, "frame_seconds": measured[key]})
                except Error as why:
                    measured[key] = float("inf")
                    evaluations.append({**config, "error": str(why)})
                    failed.append(evaluations[-1])
                advance()
        grid_measured, grid_best = len(measured), min(measured.values())
    if args.out:
        machine = tuning.machine()
        write_rows(args.out, [{"file": ds.path, "device": str(device), "cache": args.cache, **e, **machine}
                              for e in evaluations])
    if failed:
        first = failed[0]
        print(f"headrace tune: {len(failed)} of {len(evaluations)} configurations could not run; the first, "
              f"{first['method']} with {first['batch']} particles a batch: {first['error']}", file=sys.stderr)
    if result is None:
        return 1  # nothing measured, nothing stored: the line above says why
    best = result.best
    console.print(f"tuned in {len(result.evaluations)} configurations: {best['method']}, {best['batch']} particles "
                  f"per batch, {best['segments']} in flight, {best['staging_bytes'] >> 20} MiB staging: "
                  f"{result.best_seconds * 1e3:.1f} ms per frame")
    measured_default = evaluations[0]
    if "frame_seconds" in measured_default:
        console.print(f"  the defaults ({default['method']}, {default['batch']} particles, {default['segments']} in flight, {default['staging_bytes'] >> 20} MiB): "
                      f"{measured_default['frame_seconds'] * 1e3:.1f} ms per frame; tuned is "
                      f"{measured_default['frame_seconds'] / result.best_seconds:.2f} x faster")
    else:
        console.print(f"  the defaults cannot run here: {measured_default['error']}")
    if grid_best is not None:
        console.print(f"  the grid's best of {grid_measured}: {grid_best * 1e3:.1f} ms per frame; "
                      f"tuned / grid best = {result.best_seconds / grid_best:.3f}")
    if args.out:
        console.print(f"  every configuration measured: {args.out}")
    if not args.no_save:
        path = tuning.save_profile(device, codec, best, result.best_seconds, ds.path)
        console.print(f"  stored as this machine's profile in {path}")
    return 0
