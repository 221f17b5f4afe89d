"""Plays the frames of a volume or AMR file as an animation, rendering each one, and shows where each
frame's time goes and how much each of headrace's streaming steps gains, by switching them on one at a
time (the stages).

    headrace play FILE --stages baseline,double,...|every --frames A:B --timeline OUT.png

Stages are cumulative, each adding one step to the one before: baseline (buffered read, CPU flatten,
pageable copy, region lists rebuilt, all synchronous), double (the next frame read meanwhile), pinned
(page-locked upload), direct (O_DIRECT), flat (pre-flattened scalars: no CPU pass), refit (region lists
kept, classification redone), overlap (the next copy beside this render), all (the engine streams frames
ahead into GPU slots through its read path, with GPU decompression; value ranges overlapped too).
``every`` runs them all in turn. For each run: frames per second (hot: over the frames after the first,
the pipeline filled; cold: over every frame from the run's start), the
ratio to the render-only rate of the same renderer (the frame resident, measured in the same call), and
the mean time per frame of each kind of work; ``--timeline`` draws them as a timeline, a lane per kind
of work, and ``--record`` keeps them as JSON (``headrace plot RECORD.json`` draws it again). Under MPI
(``mpirun -n N headrace play``) the job shares the frames as ``--distribute`` says (by default, said with
why: each rank its block of the frames on its own GPU when there are enough frames, every frame shared by
space and composited when a frame is too heavy for one GPU, else rank 0 alone); rank 0 reports its runs
(the timeline is its own) and the job's frames per second over the slowest rank's time.
``--cache cold`` evicts the file from the page cache before each run, once this process has let go of
any pages it page-locked (locked pages stay cached); ``drop-all`` drops the whole cache (root). A cold
run of fewer than 4 x ``--slots`` frames is mostly its start, which the command says.

Where this comes from: the stages are the steps by which the study of the NASA Exajet's time-varying
AMR data on GPU workstations (rendered with ExaBricks) hid its I/O, and the timeline is drawn as that
study draws its own; ``all`` goes past it (docs/volume.md).
"""

from __future__ import annotations

import argparse
import io
import json
import time
from typing import Any

from rich.console import Console

import headrace
from headrace import distributed, timeline
from headrace._files import replacing
from headrace.cli._many_ranks import add_many_rank_arguments
from headrace.cli._output import console as shared_console
from headrace.cli._shared import (
    Budget,
    Device,
    Integer,
    Items,
    Name,
    OutputFile,
    Path as PathArgument,
    Real,
    Word,
    add_budget_argument,
    particle_device,
)
from headrace.cli._view_options import Camera, Colour, FrameRange, parse_frames
from headrace.cli._volume_options import add_volume_arguments, volume_options
from headrace.engine import release_file
from headrace.errors import UsageError
from headrace.page_cache import CACHE_STATES, uncache, warm_page_cache
from headrace.workloads.distribution import choose_distribution, frame_work
from headrace.workloads.volume import STAGES, VolumeRenderer, is_volume
from headrace.workloads.volume.sort_last import VolumeSlabs

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction, summary: str) -> None:
    parser = subparsers.add_parser("play", help=summary,
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", metavar="FILE", type=PathArgument(), help="a volume or AMR container")
    parser.add_argument("--stages", type=Items(Word(STAGES + ("every",))), default=["all"],
                        help=f"comma-separated runs, each cumulative: {', '.join(STAGES)}, or every (default all)")
    parser.add_argument("--frames", type=FrameRange(), default=None, help="frames A:B, B excluded (default: all)")
    parser.add_argument("--stride", type=Integer(1, 1 << 20, "frames"), default=1,
                        help="show every Nth frame of --frames (default 1)")
    parser.add_argument("--loops", type=Integer(1, 1000), default=1, help="play the frames this many times (default 1)")
    parser.add_argument("--timeline", type=OutputFile((".png", ".svg", ".pdf")), metavar="OUT.png",
                        help="the timeline figure: a lane per kind of work, per run")
    parser.add_argument("--record", type=OutputFile((".json",)), metavar="OUT.json",
                        help="the per-frame spans of every run, as JSON")
    parser.add_argument("--cache", choices=CACHE_STATES, default="hot",
                        help="hot: the file as the page cache has it (read once first); cold: evicted before each run; "
                             "drop-all: the whole page cache dropped before each run, root only (default hot)")
    parser.add_argument("--render-only", type=Integer(0, 1000, "renders"), default=5, dest="render_only",
                        help="renders of each resident frame (the first 8 frames played) timed for the render-only rate "
                             "(0: not measured; default 5)")
    parser.add_argument("--read-path", choices=("auto", "direct", "uring", "posix"), default="auto", dest="read_path",
                        help="stage all: the engine's read path: auto asks the page cache per range (cached: buffered "
                             "reads, the rest O_DIRECT through io_uring); direct, uring, posix force one backend "
                             "(default auto)")
    parser.add_argument("--slots", type=Integer(1, 64, "frames"), default=3,
                        help="stage all: frames in GPU memory at once (default 3)")
    parser.add_argument("--width", type=Integer(1, 16384, "pixels"), default=1024, help="image width (default 1024)")
    parser.add_argument("--height", type=Integer(1, 16384, "pixels"), default=768, help="image height (default 768)")
    parser.add_argument("--camera", type=Camera(), default="orbit:30,20", help="camera (default orbit:30,20)")
    parser.add_argument("--fov", type=Real(0, 179, "degrees", above=True), default=45.0,
                        help="vertical field of view in degrees (default 45)")
    parser.add_argument("--background", type=Colour(), default="0,0,0", help="background colour (default 0,0,0, black)")
    parser.add_argument("--device", type=Device(), default=None,
                        help="where to render (default: GPU 0 when there is one, else the CPU reference, said once)")
    parser.add_argument("--threads", type=Integer(0, 1024), default=0,
                        help="CPU threads of the reference renderer (default 0: one per core)")
    parser.add_argument("--field", type=Name(), default=None,
                        help="the field to draw (default: the first float32 field of one component)")
    add_volume_arguments(parser)
    add_many_rank_arguments(parser)
    add_budget_argument(parser, "seconds after which no new run starts (default none)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    stages = list(STAGES) if "every" in args.stages else list(dict.fromkeys(args.stages))
    ds = headrace.open(args.file)
    if not is_volume(ds):
        raise UsageError(f"{ds.path}: not a volume: play draws a grid (layout linear) or AMR (layout amr) field")
    job = distributed.ranks()
    asked = particle_device(args.device, "playing with")
    device = job.device(asked)  # this rank's GPU
    frames = list(parse_frames(args.frames, len(ds.frames)) if args.frames else range(len(ds.frames)))
    shown = frames[:: args.stride]
    spread = None
    if job.size > 1:
        spread = choose_distribution(args.distribute, job, frames=len(shown), device=device,
                                     **frame_work(ds, shown[:64], volume=True))
        if job.root:
            shared_console.print(f"{job.size} ranks: {spread.describe()}")
        if spread.how == "sort-last":
            return _play_sort_last(args, ds, asked, shown * args.loops, stages)
        if spread.how == "one":  # rank 0 plays alone: its runs wait for no other rank (they have left)
            if not job.root:
                return 0
            job = distributed.Ranks()
        if spread.how == "time":  # each rank plays its block of the frames on its own GPU
            shown = [shown[k] for k in job.frames_of(len(shown))]
            if not shown:
                raise UsageError(f"{ds.path}: {len(frames[:: args.stride])} frames to play among {job.size} ranks: "
                                 "fewer ranks, or more frames")
    order = shown * args.loops
    renderer = VolumeRenderer(ds, device=device, **volume_options(args))
    # The render-only rate of the same frames (up to 8 of them: frames differ in cost).
    render_only = renderer.render_only_fps(list(dict.fromkeys(order))[:8], args.render_only) if args.render_only else None
    where = "the CPU" if device == "cpu" else f"GPU {device}"
    console = shared_console
    if not job.root:  # rank 0 speaks for the job
        console = Console(file=io.StringIO())
    console.print(f"{ds.path}: field {renderer.field}, {renderer.topology.cell_count:,} cells in {renderer.topology.brick_count:,} "
                  f"bricks, {renderer.topology.region_count:,} regions; {len(order)} frames a run, {args.width} x "
                  f"{args.height} on {where}" + (f"; render only: {render_only:.2f} frames/s" if render_only else ""))
    record = {"format": timeline.FORMAT, "file": ds.path, "field": renderer.field,
              "device": "cpu" if device == "cpu" else f"GPU {device}", "width": args.width, "height": args.height,
              "frame_bytes": renderer.topology.cell_count * 4, "cache": args.cache, "runs": []}
    if args.cache == "hot":
        warm_page_cache([ds.path])
    else:
        _say_if_mostly_start(console, len(order), args.slots)
    budget = Budget(args.budget)
    for n, stage in enumerate(stages):
        if budget.spent(n):
            console.print(budget.said(n, len(stages), "runs done"))
            break
        how = _made_cold([ds.path], args.cache)
        job.barrier()  # the ranks start each run together: the job's time is the slowest rank's
        run = renderer.play(order, stages=stage, slots=args.slots, backend=args.read_path)
        run["render_only_fps"] = render_only
        run["cache"] = how or "hot"
        if args.cache != "hot":  # cold: the first frame counts, from the run's start
            run["fps"] = run["fps_from_start"]
        record["runs"].append(run)
        if run["notes"].startswith("on the CPU"):
            console.print(f"  {run['notes'].split(';')[0]}")
        ratio = f", {run['fps'] / render_only:.2f} of render-only" if render_only else ""
        delivered = run["frames_shown"] * run["frame_bytes"] / run["seconds"] / 1e9
        console.print(f"  {stage:>8}: {run['fps']:.2f} frames/s{ratio} ({delivered:.2f} GB/s delivered over "
                      f"{run['seconds']:.2f} s)" + (" on rank 0" if job.size > 1 else ""))
        if spread is not None and spread.how == "time":
            everyone = job.gather({"frames": run["frames_shown"], "seconds": run["seconds"], "fps": run["fps"]})
            if everyone is not None:
                slowest = max(r["seconds"] for r in everyone)
                total = sum(r["frames"] for r in everyone)
                run["job"] = {"ranks": job.size, "frames": total, "seconds": slowest, "per_rank": everyone}
                console.print(f"  {'':>8}  the job: {total} frames by {job.size} ranks in {slowest:.2f} s, "
                              f"{total / slowest:.2f} frames/s ({total * run['frame_bytes'] / slowest / 1e9:.2f} GB/s)")
    if not job.root:
        return 0
    console.print(timeline.summary_table(record))
    if args.record:
        with replacing(args.record) as partial, open(partial, "w") as out:
            json.dump(record, out, indent=1)
    if args.timeline:
        timeline.draw_timeline(record, args.timeline)
        console.print(f"{args.timeline}: the timeline of {len(record['runs'])} runs")
    return 0


def _made_cold(paths: list[str], cache: str) -> str:
    """Before a run: a cold cache evicts the files once this process's engines let go of them (pages they
    page-locked for a run before would stay cached)."""
    if cache != "hot":
        for path in paths:
            release_file(path)
    return uncache(paths, cache)


def _say_if_mostly_start(console: Any, frames: int, ahead: int) -> None:
    """A cold run of few frames is mostly the frames loaded ahead at its start: said, with what to play."""
    if frames < 4 * ahead:
        console.print(f"  a cold run of {frames} frames with {ahead} loaded ahead is mostly its start: play at least "
                      f"{4 * ahead} frames (--frames, --loops) for a cold rate")


def _play_sort_last(args: argparse.Namespace, ds: Any, device: int | str, order: list[int], stages: list[Any]) -> int:
    """Under MPI, every frame shared by space (a slab a rank, each on GPU ``device`` + its local rank) and
    composited onto rank 0: the stage all only, one run; per frame its load (io) and its draw, wait and compositing (render), the job's frames per second."""
    if stages != ["all"]:
        raise UsageError("--distribute sort-last plays the stage all (each frame read by slabs through the engine)")
    job = distributed.ranks()
    slabs = VolumeSlabs(ds, device=device, compositing=args.compositing, **volume_options(args))
    if args.cache == "hot":
        warm_page_cache([ds.path])
    elif job.root:
        _say_if_mostly_start(shared_console, len(order), 1)
    how = _made_cold([ds.path], args.cache)
    job.barrier()
    began = time.perf_counter()
    played: list[dict[str, Any]] = []
    for frame in order:
        start = time.perf_counter()
        _, stats = slabs.render(frame)
        end = time.perf_counter()
        loaded = start + stats["load_s"]
        played.append({"frame": frame, "start": start - began, "end": end - began,
                       "spans": {"io": [(start - began, loaded - began)], "render": [(loaded - began, end - began)]}})
    job.barrier()
    seconds = time.perf_counter() - began
    # Hot: the first frame fills the pipeline, as a single rank's run counts it; cold: every frame counts.
    steady = (played[1:] or played) if args.cache == "hot" else played
    fps = len(steady) / max(steady[-1]["end"] - steady[0]["start"], 1e-9)
    if not job.root:
        return 0
    bytes_per_frame = slabs.renderer.topology.cell_count * 4
    run = {"stages": "all", "frames": played, "frames_shown": len(played), "seconds": seconds, "fps": fps,
           "frame_bytes": bytes_per_frame, "render_only_fps": None, "cache": how or "hot",
           "notes": f"sort-last: {job.size} ranks, a slab each, composited on {slabs.compositing}",
           "job": {"ranks": job.size, "frames": len(played), "seconds": seconds}}
    shared_console.print(f"{ds.path}: {len(played)} frames by {job.size} ranks, a slab each ({slabs.compositing}): "
                         f"{fps:.2f} frames/s ({fps * bytes_per_frame / 1e9:.2f} GB/s delivered)")
    record = {"format": timeline.FORMAT, "file": ds.path, "field": slabs.renderer.field,
              "device": "cpu" if device == "cpu" else f"GPU {device}", "width": args.width, "height": args.height,
              "frame_bytes": bytes_per_frame, "cache": args.cache, "runs": [run]}
    if args.record:
        with replacing(args.record) as partial, open(partial, "w") as out:
            json.dump(record, out, indent=1)
    if args.timeline:
        timeline.draw_timeline(record, args.timeline)
    return 0
