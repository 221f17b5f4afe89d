"""Draws images of a file's frames: its points as shaded spheres, or a volume or AMR field ray-marched
(``--mode dvr|iso``, ``--tf``, ``--opacity``, ``--range``, ``--iso``: docs/volume.md); one image, a folder
of images or a video.

    headrace render FILE --frame I --out IMG.png
    headrace render FILE --frames A:B --out DIR/ [--video OUT.gif]

Points: any point set a file holds (docs/particles.md). Positions are a field of 3 components named
position, positions, points, xyz or coordinates, or fields x, y and z (any number type; ``--positions``
names another); the radius is ``--radius VALUE|FIELD`` (default: a field named radius, else a size from
the first frame's box and point count, said); the colour ``--colour R,G,B|FIELD`` (default: a field named
colour or rgb, else light grey), or ``--colour-by FIELD`` (``FIELD:K``, ``FIELD:magnitude``) through
``--colour-map`` over ``--colour-range``. Each frame's fields are read and packed into spheres, then drawn.

A file with the renderer's own record (``particles``: x, y, z, radius, r, g, b, a in float32, as
``headrace generate particles`` and MMPLD conversions write it) streams instead: each frame through the
engine's queue batch by batch (``--batch`` particles, whole chunks) into ``--segments`` segments, each
batch drawn as soon as it has arrived, by a ``--method``: vram, ram, ram-pinned, mmap-all, mmap-segment,
mmap-batch, pread, direct, uring-naive, uring-batched, cufile, compressed-lz4|zstd|gdeflate|chain (the last
for a file of codec chains, ``headrace compress``).

``--device 0`` draws with the CUDA kernels; ``--device cpu`` with the CPU reference renderer they are
checked against (the default where there is no GPU, said once). Cameras: ``orbit:AZ,EL[,DIST]`` around the
frame's bounding box, or ``lookat:EX,EY,EZ:TX,TY,TZ[:UX,UY,UZ]``. ``--frame -1`` is the last frame. Images
are written through a temporary file and renamed, into their folder, which is made if missing (for
``--frame``, ``--frames`` and ``--video`` alike); ``--video`` writes an animated GIF or WebP, or an MP4 where
imageio and ffmpeg are installed.

Where this comes from: the streaming renderer and its methods follow Müller and Ertl, "Quantifying
Performance Gains of DirectStorage for the Visualisation of Time-Dependent Particle Data Sets"; the
volume renderer the time-varying AMR study behind ``headrace play`` (docs/particles.md, docs/volume.md).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import headrace
from headrace import _gpu_ahead, distributed, engine, imaging, tuning
from headrace.cli._many_ranks import add_many_rank_arguments
from headrace.cli._output import console, count_progress
from headrace.cli._point_options import ColourOption, ColourSource, RadiusOption, given_point_options
from headrace.cli._shared import (
    Bounded,
    Budget,
    Device,
    Integer,
    Name,
    Path as PathArgument,
    Real,
    add_budget_argument,
    particle_device,
)
from headrace.cli._view_options import MOST_FRAME, Camera, Colour, FrameRange, parse_frames
from headrace.cli._volume_options import ValueRange, add_volume_arguments, volume_only_options, volume_options
from headrace.errors import UsageError
from headrace.workloads import particles
from headrace.workloads.distribution import Distribution, choose_distribution, frame_work
from headrace.workloads.particles.sort_last import ParticleShares
from headrace.workloads.points import PointSetRenderer, draws_point_set
from headrace.workloads.volume import VolumeRenderer, is_volume
from headrace.workloads.volume.sort_last import VolumeSlabs

__all__ = ["register", "run", "ImageOutput"]

MOST_PIXELS_A_SIDE = 16384
IMAGE_SUFFIXES = (".png", ".webp", ".gif", ".tif", ".tiff")


class ImageOutput(Bounded[str]):
    """--out of --frame and --video: a file ending in one of ``suffixes``; its folder is made if missing
    (as --frames makes its folder), so the nearest folder that exists must take new ones."""

    least = most = None

    def __init__(self, suffixes: tuple[str, ...]) -> None:
        self.suffixes = suffixes

    def describe(self) -> str:
        return f"a file ending in {' or '.join(self.suffixes)} (its folder is made if missing)"

    def parse(self, text: str) -> str:
        path = Path(text)
        if not text or path.suffix.lower() not in self.suffixes:
            raise self.fail(text)
        if text.endswith(os.sep) or path.is_dir():
            raise argparse.ArgumentTypeError(f"{text} is a folder: expected {self.describe()}")
        problem = place_problem(path.parent)
        if problem:
            raise argparse.ArgumentTypeError(f"{text}: {problem}")
        return text

    def bad_examples(self) -> list[str]:
        return ["", tempfile.gettempdir(), "out.bogus", f"/proc/no-such-folder/out{self.suffixes[0]}"]

    def good_examples(self) -> list[str]:
        return [os.path.join(tempfile.gettempdir(), "out" + self.suffixes[0]),
                os.path.join(tempfile.gettempdir(), "headrace-new-folder", "out" + self.suffixes[0])]


def place_problem(folder: Path) -> str:
    """Why ``folder`` (made if missing, with its parents) cannot take new files, or "" when it can: a file
    in its place or on its way, or a nearest existing folder that refuses new entries."""
    existing = folder
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    try:  # the one sure test that the folder takes new entries (root passes access(), a read-only mount does not)
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        return f"cannot write in {existing} ({error.strerror})"
    return ""


def register(subparsers: argparse._SubParsersAction, summary: str) -> None:
    parser = subparsers.add_parser("render", help=summary,
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", metavar="FILE", type=PathArgument(), help="a container of points, a volume or an AMR field")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--frame", type=Integer(-MOST_FRAME - 1, MOST_FRAME),
                       help="one frame (negative: from the end, -1 the last), into --out IMG.png")
    which.add_argument("--frames", type=FrameRange(), help="frames A:B (B excluded), into the folder --out DIR/")
    parser.add_argument("--out", required=True, type=PathArgument(), metavar="IMG.png|DIR/",
                        help="--frame: the image (.png, .webp, .gif, .tif); --frames: the folder of images (a "
                             "missing folder is made, for both)")
    parser.add_argument("--video", type=ImageOutput((".gif", ".webp", ".mp4")), metavar="OUT.gif|OUT.webp|OUT.mp4",
                        help="--frames: also an animation")
    parser.add_argument("--fps", type=Real(0, 100, "frames per second", above=True), default=None,
                        help="--video: animation frames per second (default 10)")
    pixels = Integer(1, MOST_PIXELS_A_SIDE, "pixels")
    parser.add_argument("--width", type=pixels, default=1024, help="image width (default 1024)")
    parser.add_argument("--height", type=pixels, default=768, help="image height (default 768)")
    parser.add_argument("--camera", type=Camera(), default="orbit:30,20",
                        help="where the camera looks from (default orbit:30,20)")
    parser.add_argument("--fov", type=Real(0, 179, "degrees", above=True), default=45.0,
                        help="vertical field of view in degrees (default 45)")
    parser.add_argument("--background", type=Colour(), default="0,0,0", help="background colour (default 0,0,0, black)")
    parser.add_argument("--batch", type=Integer(1, 1 << 30, "particles"), default=None,
                        help="particles per batch (default: the tuned profile's, headrace tune, else 1048576)")
    parser.add_argument("--segments", type=Integer(1, 4096), default=None,
                        help="batches in flight (default: the profile's, else 16)")
    parser.add_argument("--method", choices=tuple(particles.METHODS), default=None,
                        help="streaming method (default: the profile's, else auto, the engine's read path)")
    parser.add_argument("--field", type=Name(), default=None,
                        help="the field to draw (default: particles, or a volume's first float32 field of one component)")
    parser.add_argument("--device", type=Device(), default=None,
                        help="where to draw (default: GPU 0 when there is one, else the CPU reference renderer, said once)")
    parser.add_argument("--threads", type=Integer(0, 1024), default=0,
                        help="CPU threads of the reference renderer (default 0: one per core)")
    parser.add_argument("--stats", action="store_true", help="print each frame's statistics")
    points = parser.add_argument_group(
        "point sets (particles held as fields: H5Part, .vtp, .npy or HDF5 points converted by headrace convert)")
    points.add_argument("--positions", type=Name(), default=None, metavar="FIELD",
                        help="the field of 3 components holding the positions (default: the one named position, "
                             "positions, points, xyz or coordinates, or fields x, y and z)")
    points.add_argument("--radius", type=RadiusOption(), default=None, metavar="VALUE|FIELD",
                        help="every point's radius, or the field holding it (default: a field named radius, else a "
                             "size from the first frame's box and point count, said)")
    points.add_argument("--colour", type=ColourOption(), default=None, metavar="R,G,B[,A]|FIELD",
                        help="every point's colour, or the RGB or RGBA field holding it (default: a field named "
                             "colour, color or rgb(a), else light grey)")
    points.add_argument("--colour-by", type=ColourSource(), default=None, metavar="FIELD",
                        help="colour each point by a field of the file through --colour-map (a particles record's file "
                             "too)")
    points.add_argument("--colour-map", type=Name(), default=None, metavar="NAME",
                        help="--colour-by: a matplotlib colour map (default viridis)")
    points.add_argument("--colour-range", type=ValueRange(), default=None, metavar="LO:HI",
                        help="--colour-by: the values the colour map spans (default: the field's range over every "
                             "frame, from the file's index)")
    add_volume_arguments(parser)
    add_many_rank_arguments(parser)
    add_budget_argument(parser, "a series: seconds after which no new frame starts (the frames drawn are kept, "
                                "the animation holds them; default none)")
    parser.set_defaults(func=run)


def _check_image_output(path: str) -> None:
    """--out of --frame: an image Pillow writes by its suffix, its folder made if missing (checked before the
    work, made when the image is written)."""
    try:
        ImageOutput(IMAGE_SUFFIXES).parse(path)
    except argparse.ArgumentTypeError as why:
        raise UsageError(f"--out: {why}") from None


def _check_folder_output(path: str) -> None:
    """--out of --frames: a folder, made if missing; not an existing file."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--out {path}: a file, not a folder: --frames writes one image per frame into a folder")
    problem = place_problem(folder)
    if problem:
        raise UsageError(f"--out {path}: {problem}")


def _frames(args: argparse.Namespace, ds) -> range:
    """The frames this process draws: --frame's, --frames', or its block of them when a job shares them by time."""
    if args.block:
        return args.block
    return range(args.frame, args.frame + 1) if args.frame is not None else parse_frames(args.frames, len(ds.frames))


def _series_start(args: argparse.Namespace, ds) -> int:
    """The first frame asked for, whose box frames the camera of every rank's frames."""
    return args.frame if args.frame is not None else parse_frames(args.frames, len(ds.frames)).start


def _block(job: Any, count: int) -> tuple[int, int]:
    """This rank's block (first, end) of ``count`` frames."""
    mine = job.frames_of(count)
    return (mine[0], mine[-1] + 1) if mine else (0, 0)


def _write_image(path: str | Path, image: Any) -> None:
    """An image, its folder made first if missing (--out of --frame, as --frames makes its folder)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    imaging.write_image(path, image)


def _write_last_image(path: str | Path, image: Any, file: str | Path) -> None:
    """The command's one image, encoded on a thread while the engines let go of ``file`` (the caller has
    dropped its renderer) and the GPU's context is let go: its pages are unlocked (0.03 s for 3.2 GB,
    docs/results.md) and the context torn down meanwhile, which the process's exit would otherwise pay
    after the PNG. Unlocked by close_path and the context closed by CudaStream.close, which let the
    encoder run: an engine's destructor holds the interpreter's lock."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with imaging.ImageWriter(threads=1) as writer:
        writer.write(path, image)
        engine.release_file(file)
        headrace.release_engines()
        _gpu_ahead.release_held()


def run(args: argparse.Namespace) -> int:
    if args.frame is not None:
        for given, option in ((args.video, "--video"), (args.fps, "--fps")):
            if given is not None:
                raise UsageError(f"{option} needs --frames (an animation of several frames)")
        _check_image_output(args.out)
    else:
        if args.fps is not None and args.video is None:
            raise UsageError("--fps needs --video")
        _check_folder_output(args.out)
    # Pillow's encoders load while the GPU's context is made and the file is opened and page-locked.
    threading.Thread(target=imaging.load_encoders, name="headrace-encoders").start()
    ds = headrace.open(args.file)
    if args.frame is not None:
        args.frame = imaging.frame_of(ds, args.frame)
    device = particle_device(args.device, "drawing with")
    point_options = given_point_options(args)
    volume = is_volume(ds)
    if volume:
        if point_options:
            named = ", ".join("--" + name.replace("_", "-") for name in point_options)
            raise UsageError(f"{named}: point-set options; {ds.path} is a volume (--tf and --range colour it)")
        particle_only = [name for name, value in (("--batch", args.batch), ("--segments", args.segments),
                                                  ("--method", args.method)) if value is not None]
        if particle_only:
            raise UsageError(f"{', '.join(particle_only)}: particle options; {ds.path} is a volume")
    elif volume_only_options(args):
        hint = " (points take --colour-map and --colour-range with --colour-by)" if args.tf or args.range else ""
        raise UsageError(f"{', '.join(volume_only_options(args))}: volume options; {ds.path} holds particles{hint}")
    point_set = not volume and draws_point_set(ds, args.field, **point_options)
    args.block = None  # this rank's frames when the job shares them by time
    job = distributed.ranks()
    if job.size > 1:
        frames = _frames(args, ds)
        if args.video is not None and args.distribute not in ("auto", "one"):
            raise UsageError(f"--video with --distribute {args.distribute}: one animation is written by one rank "
                             "(--distribute one, which auto takes with --video)")
        if args.video is not None:  # one animation: one rank draws its frames in order and writes it
            spread = Distribution("one", "--video: one rank writes the animation")
        else:
            spread = choose_distribution(args.distribute, job, frames=len(frames), device=job.device(device),
                                         sort_last=not point_set, **frame_work(ds, frames[:64], volume))
        if job.root:
            console.print(f"{job.size} ranks: {spread.describe()}")
        if spread.how == "sort-last":
            return _render_volume_sort_last(args, ds, device) if volume else _render_particles_sort_last(args, ds, device)
        args.block = frames[slice(*_block(job, len(frames)))] if spread.how == "time" else (frames if job.root else None)
        if not args.block:
            return 0  # nothing for this rank: rank 0 draws alone, or more ranks than frames
        device = job.device(device) or device
    where = "the CPU" if device == "cpu" else f"GPU {device}"
    if volume:
        return _render_volume(args, ds, device, where)
    if point_set:
        return _render_points(args, ds, device, where, point_options)
    codecs = ds.codecs
    tuned = tuning.default_configuration(device, codecs[0] if codecs else "none")
    profile_used = False
    if None in (args.method, args.batch, args.segments):
        profile = tuning.load_profile(device, codecs[0]) if len(codecs) == 1 else None
        if profile:
            profile_used = True
            tuned.update({k: profile[k] for k in tuned if k in profile})
            if distributed.ranks().root:  # every rank of a job reads the same profile: said once
                console.print(f"this machine's tuned profile ({tuning.profile_path()}): {tuned['method']}, "
                              f"{tuned['batch']} particles per batch, {tuned['segments']} in flight")
    method = args.method or tuned["method"]
    batch = args.batch if args.batch is not None else tuned["batch"]
    segments = args.segments if args.segments is not None else tuned["segments"]
    frames = _frames(args, ds)
    # One pipeline and one camera (framed on the first frame) for the whole series.
    setup_start = time.perf_counter()
    renderer = particles.StreamingRenderer(ds, camera=args.camera, field=args.field or "particles", width=args.width, height=args.height,
                                        fov=args.fov, background=args.background, batch=batch, segments=segments,
                                        threads=args.threads, method=method, device=device, camera_frame=_series_start(args, ds),
                                        **({"staging_bytes": tuned["staging_bytes"]} if profile_used else {}))
    if args.frame is None:  # a series: the images its writers hold at once, the last the loop names and the one
        images_start = time.perf_counter()  # coming home, made ahead
        renderer.reserve_images(imaging.writer_pending() + 2)
        renderer.setup_seconds["images"] = time.perf_counter() - images_start
    if args.stats:  # paid once a process, apart from any frame's time
        parts = ", ".join(f"{name} {seconds * 1e3:.1f}" for name, seconds in renderer.setup_seconds.items())
        console.print(f"  setup: {(time.perf_counter() - setup_start) * 1e3:.1f} ms ({parts}: the engine, the file opened "
                      f"and page-locked if the engine pins it, the renderer" + (", the images' memory" if args.frame is None else "") + ")")

    def draw(frame: int, next_frame: int | None = None):
        stats = renderer.render(frame, next_frame=next_frame)
        image = renderer.image()
        if args.stats:
            between = stats.get("between_calls_seconds", 0.0)  # the command's own time between two frames
            console.print(f"  frame {frame}: {stats['seconds'] * 1e3:.1f} ms ({stats['draw_seconds'] * 1e3:.1f} ms drawing"
                          + (f", {between * 1e3:.1f} ms between the calls" if between else "") + "), "
                          f"{stats['batches']} batches ({stats['loaded_ahead']} loaded ahead), {stats['particles']} particles, "
                          f"{stats['stored_bytes'] / 1e6:.1f} MB read, {stats['segment_waits']} segment waits")
        return image

    if args.frame is not None:
        start = time.perf_counter()
        image = draw(args.frame)
        del renderer  # the engine may let go of the file while the image is written
        _write_last_image(args.out, image, ds.path)
        console.print(f"{args.out}: frame {args.frame}, {args.width} x {args.height}, {method} on {where}, "
                      f"{time.perf_counter() - start:.2f} s")
        return 0
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    images = []
    start, budget = time.perf_counter(), Budget(args.budget)
    drawn = 0
    # The images are written while the next frames are drawn.
    with count_progress(f"rendering {len(frames)} frames", len(frames)) as advance, imaging.ImageWriter() as writer:
        for n, frame in enumerate(frames):  # each frame loads the next one's first batches while it is drawn
            if budget.spent(drawn):
                console.print(budget.said(drawn, len(frames), "frames rendered"))
                break
            image = draw(frame, frames[n + 1] if n + 1 < len(frames) else None)
            writer.write(folder / f"frame_{frame:05d}.png", image)
            if args.video:
                images.append(image)
            drawn += 1
            advance()
    if args.video:
        _write_animation(args.video, images, args.fps or 10.0)
    console.print(f"{folder}: frames {frames.start} to {frames.start + drawn - 1} ({drawn} images), {method} on {where}, "
                  f"{time.perf_counter() - start:.2f} s" + (f"; {args.video}" if args.video else ""))
    return 0


def _render_points(args: argparse.Namespace, ds, device: int | str, where: str, options: dict[str, Any]) -> int:
    """A point set (headrace.workloads.points): each frame's fields read, packed into sphere records and drawn; the
    mapping from fields to points said once, each frame's statistics with --stats."""
    streaming = [name for name, value in (("--batch", args.batch), ("--segments", args.segments), ("--method", args.method),
                                          ("--field", args.field)) if value is not None]
    if streaming:
        hint = " (--positions names the positions)" if args.field is not None else ""
        raise UsageError(f"{', '.join(streaming)}: options of a streamed particles record; {ds.path} is drawn as a "
                         f"point set from its fields{hint}")
    frames = _frames(args, ds)
    renderer = PointSetRenderer(ds, device=device, camera=args.camera, width=args.width, height=args.height,
                                       fov=args.fov, background=args.background, threads=args.threads,
                                       camera_frame=_series_start(args, ds), **options)
    console.print(f"{ds.path}: {renderer.points.describe()}")

    def draw(frame: int):
        stats = renderer.render(frame)
        if args.stats:
            console.print(f"  frame {frame}: {stats['seconds'] * 1e3:.1f} ms ({stats['read_seconds'] * 1e3:.1f} ms reading "
                          f"and packing, {stats['draw_seconds'] * 1e3:.1f} ms drawing), {stats['points']} points")
        return renderer.image()

    start = time.perf_counter()
    if args.frame is not None:
        _write_image(args.out, draw(args.frame))
        console.print(f"{args.out}: frame {args.frame}, {args.width} x {args.height}, points on {where}, "
                      f"{time.perf_counter() - start:.2f} s")
        return 0
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    images = []
    budget, drawn = Budget(args.budget), 0
    with count_progress(f"rendering {len(frames)} frames", len(frames)) as advance, imaging.ImageWriter() as writer:
        for frame in frames:
            if budget.spent(drawn):
                console.print(budget.said(drawn, len(frames), "frames rendered"))
                break
            image = draw(frame)
            writer.write(folder / f"frame_{frame:05d}.png", image)
            if args.video:
                images.append(image)
            drawn += 1
            advance()
    if args.video:
        _write_animation(args.video, images, args.fps or 10.0)
    console.print(f"{folder}: frames {frames.start} to {frames.start + drawn - 1} ({drawn} images), points on {where}, "
                  f"{time.perf_counter() - start:.2f} s" + (f"; {args.video}" if args.video else ""))
    return 0


def _write_animation(path: str, images: list, fps: float) -> None:
    """--video, its folder made first if missing."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    imaging.write_animation(path, images, fps)


def _render_particles_sort_last(args: argparse.Namespace, ds, device: int | str) -> int:
    """Under MPI: every rank draws its share of each frame (by space), composited by depth onto rank 0, which
    writes the images (headrace.workloads.particles.sort_last): the single-rank images, bit for bit."""
    ignored = [name for name, value in (("--batch", args.batch), ("--segments", args.segments), ("--method", args.method))
               if value is not None]
    if ignored:
        raise UsageError(f"{', '.join(ignored)}: under MPI each rank reads its share of a frame with the engine's read "
                         "path and rank 0 writes one image a frame")
    shares = ParticleShares(ds, device=device, camera=args.camera, field=args.field or "particles", width=args.width,
                            height=args.height, fov=args.fov, background=args.background, compositing=args.compositing)
    return _render_sort_last(args, ds, shares.render, lambda s: f"{s['chunks']} chunks, {s['particles']} particles",
                             f"and composited by depth ({shares.compositing}, {shares.schedule})")


def _render_volume_sort_last(args: argparse.Namespace, ds, device: int | str) -> int:
    """Under MPI: every rank ray-marches its slab of each frame (by space), composited front to back onto
    rank 0, which writes the images (headrace.workloads.volume.sort_last): the single-rank images up to rounding."""
    slabs = VolumeSlabs(ds, device=device, compositing=args.compositing, **volume_options(args))
    return _render_sort_last(
        args, ds, slabs.render,
        lambda s: f"region layers {s['layers'][0]} to {s['layers'][1]}, {s['chunks']} chunks, {s['cells']} cells",
        f"a slab each, composited front to back ({slabs.compositing})")


def _render_sort_last(args: argparse.Namespace, ds, draw, share, how: str) -> int:
    """Each frame drawn by every rank (draw(frame) -> this rank's image or None, its statistics); rank 0 writes
    the images and, with --stats, each rank's share (share(statistics)) and times."""
    job = distributed.ranks()
    frames = [args.frame] if args.frame is not None else list(parse_frames(args.frames, len(ds.frames)))
    if not 0 <= frames[0] < len(ds.frames):
        raise UsageError(f"--frame {frames[0]}: the file has frames 0 to {len(ds.frames) - 1}")
    if args.frame is None:
        Path(args.out).mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    for frame in frames:
        image, stats = draw(frame)
        everyone = job.gather(stats)
        if job.root:
            assert image is not None and everyone is not None
            out = args.out if args.frame is not None else str(Path(args.out) / f"frame_{frame:05d}.png")
            _write_image(out, image)
            if args.stats:
                for s in everyone:
                    console.print(f"  frame {frame}, rank {s['rank']} ({s['device']}): {share(s)}; load {s['load_s'] * 1e3:.1f} "
                                  f"ms, draw {s['draw_s'] * 1e3:.1f} ms, wait {s['wait_s'] * 1e3:.1f} ms, composite "
                                  f"{s['composite_s'] * 1e3:.1f} ms")
    if job.root:
        console.print(f"{args.out}: {len(frames)} frame(s), {args.width} x {args.height}, drawn by {job.size} ranks {how}, "
                      f"{time.perf_counter() - start:.2f} s")
    return 0


def _render_volume(args: argparse.Namespace, ds, device: int | str, where: str) -> int:
    """A volume or AMR field: every frame through the engine into the renderer (the `all` stage of headrace
    play), one image each; a frame that fails to load stops the run with its error, no image for it."""
    frames = list(_frames(args, ds))
    if not 0 <= frames[0] < len(ds.frames):
        raise UsageError(f"--frame {frames[0]}: the file has frames 0 to {len(ds.frames) - 1}")
    renderer = VolumeRenderer(ds, device=device, **volume_options(args))
    start = time.perf_counter()
    if args.frame is not None:
        field, mode, image = renderer.field, renderer.mode, renderer.render(args.frame)
        del renderer  # the engine may let go of the file while the image is written
        _write_last_image(args.out, image, ds.path)
        console.print(f"{args.out}: frame {args.frame} of {field}, {args.width} x {args.height}, "
                      f"{mode} on {where}, {time.perf_counter() - start:.2f} s")
        return 0
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    images = []
    budget = Budget(args.budget)
    with count_progress(f"rendering {len(frames)} frames", len(frames)) as advance, imaging.ImageWriter() as writer:
        def keep(frame: int, image) -> bool:
            writer.write(folder / f"frame_{frame:05d}.png", image)
            if args.video:
                images.append(image)
            advance()
            return not budget.spent(len(images) or 1)

        run = renderer.play(frames, stages="all", on_image=keep)
    drawn = run["frames_shown"]
    if drawn < len(frames):
        console.print(budget.said(drawn, len(frames), "frames rendered"))
    if args.video:
        _write_animation(args.video, images, args.fps or 10.0)
    if args.stats:
        for f in run["frames"]:
            spans = ", ".join(f"{kind} {sum(e - s for s, e in spans) * 1e3:.1f} ms" for kind, spans in f["spans"].items())
            console.print(f"  frame {f['frame']}: {spans}")
    console.print(f"{folder}: frames {frames[0]} to {frames[drawn - 1]} ({drawn} images) of {renderer.field}, {renderer.mode} on "
                  f"{where}, {time.perf_counter() - start:.2f} s ({run['fps']:.1f} frames/s)" + (f"; {args.video}" if args.video else ""))
    return 0
