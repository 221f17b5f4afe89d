"""``headrace tune FILE [--budget SECONDS]``: the best streaming configuration for this machine and data
set (method, particles per batch, batches in flight, staging), found within a time budget by random
sampling followed by refinement of the best (``headrace.tune``), each configuration measured by seed
000's algorithm 3 over ``--wall-seconds``. The winner becomes this machine's profile: ``headrace
render`` and ``headrace stream`` use it when their options are not given. ``--compare-grid`` then
measures every configuration of the (small) space and says how far the tuned one is from the best.
"""

from __future__ import annotations

import argparse
import dataclasses

from headrace.errors import UsageError

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("tune", help="find and store this machine's best streaming configuration",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", metavar="FILE", help="a particle container (headrace generate particles)")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds of searching (default 120)")
    parser.add_argument("--device", default=None, help="GPU ordinal, or cpu (default: 0 when a GPU is there)")
    parser.add_argument("--methods", default=None, help="comma-separated (default: every method the device runs)")
    parser.add_argument("--batches", default="128000,500000,1000000", help="particles per batch")
    parser.add_argument("--segments", default="2,4,16,64,256", help="batches in flight")
    parser.add_argument("--staging", default="64M,256M,1G", help="staging sizes")
    parser.add_argument("--cache", choices=("hot", "cold"), default="hot")
    parser.add_argument("--wall-seconds", type=float, default=0.5, help="algorithm 3's T_w per configuration")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--height", type=int, default=768)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compare-grid", action="store_true",
                        help="also measure the whole space and report the tuned result against its best")
    parser.add_argument("--no-save", action="store_true", help="report only; keep the stored profile")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import headrace
    from headrace import tune
    from headrace.bench.cases import particles as study
    from headrace.cli._output import console
    from headrace.cli.bench import particle_device, particle_space

    device = particle_device(args.device, "tuning")
    ds = headrace.open(args.file)
    codecs = ds.codecs
    if len(codecs) != 1:
        raise UsageError(f"{args.file}: chunks of several codecs ({', '.join(codecs)}); tune one kind of file")
    codec = codecs[0]
    space = particle_space(args, device, codecs)
    baselines = [m for m in space.methods if m in study.BASELINES]  # neither streams through headrace
    if args.methods and baselines:
        raise UsageError(f"--methods: {', '.join(baselines)} cannot be tuned (baselines, not ways to stream)")
    space = dataclasses.replace(space, methods=tuple(m for m in space.methods if m not in baselines))
    frames = list(range(len(ds.frames)))

    def evaluate(config: dict) -> float:
        renderer = study.renderer_for(ds, config, device=device, width=args.width, height=args.height)
        result = study.algorithm3(renderer, frames, cache=args.cache, prewarm=2, wall_seconds=args.wall_seconds,
                                  gpu_iterations=2)
        return result.wall_seconds / result.wall_frames

    default = tune.default_configuration(device, codec)
    result = tune.tune(evaluate, space, args.budget, seed=args.seed, start_with=(default,))
    best = result.best
    console.print(f"tuned in {len(result.evaluations)} configurations: {best['method']}, {best['batch']} particles "
                  f"per batch, {best['segments']} in flight, {best['staging_bytes'] >> 20} MiB staging: "
                  f"{result.best_seconds * 1e3:.1f} ms per frame")
    measured_default = result.evaluations[0]
    if "frame_seconds" in measured_default:
        console.print(f"  the defaults ({default['method']}, {default['batch']} particles, {default['segments']} in flight, {default['staging_bytes'] >> 20} MiB): "
                      f"{measured_default['frame_seconds'] * 1e3:.1f} ms per frame; tuned is "
                      f"{measured_default['frame_seconds'] / result.best_seconds:.2f} x faster")
    else:
        console.print(f"  the defaults cannot run here: {measured_default['error']}")
    if args.compare_grid:
        measured = {tuple(e[k] for k in ("method", *tune.FACTORS)): e.get("frame_seconds", float("inf"))
                    for e in result.evaluations if e["method"] in space.methods and e["batch"] in space.batches
                    and e["segments"] in space.segments and e["staging_bytes"] in space.staging_bytes}
        for config in study.grid(space):
            key = tuple(config[k] for k in ("method", *tune.FACTORS))
            if key not in measured:
                try:
                    measured[key] = evaluate(config)
                except headrace.errors.Error:
                    measured[key] = float("inf")
        grid_best = min(measured.values())
        console.print(f"  the grid's best of {len(measured)}: {grid_best * 1e3:.1f} ms per frame; "
                      f"tuned / grid best = {result.best_seconds / grid_best:.3f}")
    if not args.no_save:
        path = tune.save_profile(device, codec, best, result.best_seconds, ds.path)
        console.print(f"  stored as this machine's profile in {path}")
    return 0
