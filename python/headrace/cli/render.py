"""``headrace render FILE --frame I --out IMG.png`` or ``--frames A:B --out DIR/ [--video OUT.gif]``:
particle frames drawn as sphere glyphs (seed 000, section 3).

Every particle (x, y, z, radius, r, g, b, a) is a ray-cast sphere with a correct depth and headlight
shading. The frame streams through the engine's queue batch by batch (``--batch`` particles, whole
chunks) into ``--segments`` segments, each batch drawn as soon as it has arrived (seed 000's algorithms
1 and 2), by a ``--method`` of seed 000 on Linux: vram, ram, ram-pinned, mmap-all, mmap-segment, mmap-batch,
pread, direct, uring-naive, uring-batched, cufile, compressed-lz4|zstd|gdeflate. ``--device 0`` draws
with the CUDA kernels; ``--device cpu`` with the CPU reference renderer they are checked against (the
default where there is no GPU, said once). Cameras: ``orbit:AZ,EL[,DIST]`` around the frame's bounding
box, or ``lookat:EX,EY,EZ:TX,TY,TZ[:UX,UY,UZ]``. Images are written through a temporary file and
renamed; ``--video`` writes an animated GIF or WebP, or an MP4 where imageio and ffmpeg are installed.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from headrace.errors import UsageError

__all__ = ["register", "run", "parse_frames"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("render", help="particle frames as sphere glyphs (PNG, animation)",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", metavar="FILE")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--frame", type=int, help="one frame, into --out IMG.png")
    which.add_argument("--frames", help="frames A:B (B excluded), into the folder --out DIR/")
    parser.add_argument("--out", required=True, metavar="IMG.png|DIR/")
    parser.add_argument("--video", metavar="OUT.gif|OUT.webp|OUT.mp4", help="--frames: also an animation")
    parser.add_argument("--fps", type=float, default=10.0, help="animation frames per second (default 10)")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--height", type=int, default=768)
    parser.add_argument("--camera", default="orbit:30,20", help="orbit:AZ,EL[,DIST] or lookat:EX,EY,EZ:TX,TY,TZ[:UX,UY,UZ]")
    parser.add_argument("--fov", type=float, default=45.0, help="vertical field of view in degrees (default 45)")
    parser.add_argument("--background", default="0,0,0", help="R,G,B in 0..255 (default black)")
    parser.add_argument("--batch", type=int, default=None,
                        help="particles per batch (default: the tuned profile's, headrace tune, else 1048576)")
    parser.add_argument("--segments", type=int, default=None, help="batches in flight (default: the profile's, else 16)")
    parser.add_argument("--method", default=None,
                        help="streaming method (default: the profile's, else auto, the engine's read path)")
    parser.add_argument("--field", default="particles", help="the particle field (default particles)")
    parser.add_argument("--device", default=None, help="GPU ordinal, or cpu (default: 0 when a GPU is there, else cpu)")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads of the reference renderer (default: all)")
    parser.add_argument("--stats", action="store_true", help="print each frame's statistics")
    parser.set_defaults(func=run)


def parse_frames(text: str, frame_count: int) -> range:
    try:
        first, _, last = text.partition(":")
        frames = range(int(first or 0), int(last) if last else frame_count)
    except ValueError:
        raise UsageError(f"--frames {text!r}: expected A:B") from None
    if not frames or frames.start < 0 or frames.stop > frame_count:
        raise UsageError(f"--frames {text!r}: the file has frames 0 to {frame_count - 1}")
    return frames


def run(args: argparse.Namespace) -> int:
    import headrace
    from headrace import render
    from headrace.cli._output import console

    try:
        background = tuple(int(c) for c in args.background.split(","))
    except ValueError:
        background = ()
    if len(background) != 3 or not all(0 <= c <= 255 for c in background):
        raise UsageError(f"--background {args.background!r}: expected R,G,B in 0..255")
    ds = headrace.open(args.file)
    from headrace.cli.bench import particle_device

    device = particle_device(args.device, "drawing with")
    where = "the CPU" if device == "cpu" else f"GPU {device}"
    from headrace import tune

    codecs = ds.codecs
    tuned = tune.default_configuration(device, codecs[0] if codecs else "none")
    profile_used = False
    if None in (args.method, args.batch, args.segments):
        profile = tune.load_profile(device, codecs[0]) if len(codecs) == 1 else None
        if profile:
            profile_used = True
            tuned.update({k: profile[k] for k in tuned if k in profile})
            console.print(f"this machine's tuned profile ({tune.profile_path()}): {tuned['method']}, "
                          f"{tuned['batch']} particles per batch, {tuned['segments']} in flight")
    method = args.method or tuned["method"]
    batch, segments = args.batch or tuned["batch"], args.segments or tuned["segments"]
    first = args.frame if args.frame is not None else parse_frames(args.frames, len(ds.frames)).start
    # One pipeline and one camera (framed on the first frame) for the whole series.
    renderer = render.StreamingRenderer(ds, camera=args.camera, field=args.field, width=args.width, height=args.height,
                                        fov=args.fov, background=background, batch=batch, segments=segments,
                                        threads=args.threads, method=method, device=device, camera_frame=first,
                                        **({"staging_bytes": tuned["staging_bytes"]} if profile_used else {}))

    def draw(frame: int, next_frame: int | None = None):
        stats = renderer.render(frame, next_frame=next_frame)
        image = renderer.image()
        if args.stats:
            console.print(f"  frame {frame}: {stats['seconds'] * 1e3:.1f} ms ({stats['draw_seconds'] * 1e3:.1f} ms drawing), "
                          f"{stats['batches']} batches ({stats['loaded_ahead']} loaded ahead), {stats['particles']} particles, "
                          f"{stats['stored_bytes'] / 1e6:.1f} MB read, {stats['segment_waits']} segment waits")
        return image

    if args.frame is not None:
        start = time.perf_counter()
        render.write_image(args.out, draw(args.frame))
        console.print(f"{args.out}: frame {args.frame}, {args.width} x {args.height}, {method} on {where}, "
                      f"{time.perf_counter() - start:.2f} s")
        return 0
    if args.video is None and args.fps != 10.0:
        raise UsageError("--fps needs --video")
    frames = parse_frames(args.frames, len(ds.frames))
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    images = []
    start = time.perf_counter()
    for n, frame in enumerate(frames):  # each frame loads the next one's first batches while it is drawn
        image = draw(frame, frames[n + 1] if n + 1 < len(frames) else None)
        render.write_image(folder / f"frame_{frame:05d}.png", image)
        if args.video:
            images.append(image)
    if args.video:
        render.write_animation(args.video, images, args.fps)
    console.print(f"{folder}: frames {frames.start} to {frames.stop - 1} ({len(frames)} images), {method} on {where}, "
                  f"{time.perf_counter() - start:.2f} s" + (f"; {args.video}" if args.video else ""))
    return 0
