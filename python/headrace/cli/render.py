"""``headrace render FILE --frame I --out IMG.png`` or ``--frames A:B --out DIR/ [--video OUT.gif]``:
particle frames drawn as sphere glyphs (seed 000, section 3).

Every particle (x, y, z, radius, r, g, b, a) is a ray-cast sphere with a correct depth and headlight
shading, drawn batch by batch (``--batch`` particles at a time). ``--device cpu`` draws with the CPU
reference renderer, the one the GPU renderer's images are checked against; the GPU renderer and the
streaming methods of ``headrace bench particles`` come with issue 7. Cameras: ``orbit:AZ,EL[,DIST]``
around the frame's bounding box, or ``lookat:EX,EY,EZ:TX,TY,TZ[:UX,UY,UZ]``. Images are written
through a temporary file and renamed; ``--video`` writes an animated GIF or WebP, or an MP4 where
imageio and ffmpeg are installed.
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
    parser.add_argument("--batch", type=int, default=1 << 20, help="particles per batch (default 1048576)")
    parser.add_argument("--field", default="particles", help="the particle field (default particles)")
    parser.add_argument("--device", choices=("cpu",), default="cpu", help="cpu: the reference renderer")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (default: one per core)")
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
    options = dict(camera=args.camera, field=args.field, width=args.width, height=args.height, fov=args.fov,
                   background=background, batch=args.batch, threads=args.threads)
    if args.frame is not None:
        start = time.perf_counter()
        image = render.render_frame(ds, args.frame, **options)
        render.write_image(args.out, image)
        console.print(f"{args.out}: frame {args.frame}, {args.width} x {args.height}, "
                      f"{time.perf_counter() - start:.2f} s on the CPU")
        return 0
    if args.video is None and args.fps != 10.0:
        raise UsageError("--fps needs --video")
    frames = parse_frames(args.frames, len(ds.frames))
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    images = []
    start = time.perf_counter()
    for frame in frames:
        image = render.render_frame(ds, frame, **options)
        render.write_image(folder / f"frame_{frame:05d}.png", image)
        if args.video:
            images.append(image)
    if args.video:
        render.write_animation(args.video, images, args.fps)
    console.print(f"{folder}: frames {frames.start} to {frames.stop - 1} ({len(frames)} images), "
                  f"{time.perf_counter() - start:.2f} s on the CPU" + (f"; {args.video}" if args.video else ""))
    return 0
