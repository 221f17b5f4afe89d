"""What lies between two frames of a series as ``headrace render FILE --frames 0:N`` draws it: the same renderer, batch
and segments, each frame loading the next one's batches, with, between the calls, nothing; the image read back; the
image read back and handed to the PNG writers (the command's loop); and the image read back with no next frame
loading. Median per frame of the frame's time, its drawing, the time between the calls (``between_calls_seconds``)
and the image's read-back; ``--png-threads`` repeats the PNG variant with that many writer threads (the command's
default is half the cores, at most 8). Usage: ``python3 bench/series_between.py FILE [--frames 16] [--png-threads 4,2]``;
one CSV row a variant on stdout."""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import headrace
from headrace import imaging, tuning
from headrace.workloads import particles


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file")
    parser.add_argument("--frames", type=int, default=16)
    parser.add_argument("--device", default="0")
    parser.add_argument("--png-threads", default="", help="writer threads of more PNG variants, comma-separated")
    args = parser.parse_args()
    device = args.device if args.device == "cpu" else int(args.device)
    ds = headrace.open(args.file)
    frames = list(range(min(args.frames, len(ds.frames))))
    defaults = tuning.default_configuration(device, "none")  # as headrace render takes them without a profile
    renderer = particles.StreamingRenderer(ds, device=device, batch=defaults["batch"], segments=defaults["segments"])
    renderer.render(frames[0])  # the kernels, the file's pages and the image's first read-back made before the variants
    renderer.image()
    renderer.reserve_images(imaging.writer_pending() + 2)  # as the command does before its first frame
    print("variant,frames,frame_ms,draw_ms,between_ms,image_ms,total_ms")
    with tempfile.TemporaryDirectory(dir=Path(args.file).parent) as folder:
        # "image, nothing loading": each frame alone (no next frame loading while the image comes home)
        # (variant, PNG writer threads: 0 the command's default)
        more = [(f"image+png, {int(n)} threads", int(n)) for n in args.png_threads.split(",") if n]
        for variant, threads in (("nothing", 0), ("image", 0), ("image+png", 0), ("image, nothing loading", 0), *more):
            rows, taking = [], []
            ahead = variant != "image, nothing loading"
            with imaging.ImageWriter(threads=threads) as writer:
                for n, frame in enumerate(frames):
                    following = frames[n + 1] if ahead and n + 1 < len(frames) else None
                    stats = renderer.render(frame, next_frame=following)
                    rows.append(stats)
                    if variant != "nothing":
                        start = time.perf_counter()
                        image = renderer.image()
                        taking.append(time.perf_counter() - start)
                        if variant.startswith("image+png"):
                            writer.write(Path(folder) / f"{variant}_{n:05d}.png", image)
            later = rows[1:]  # the first frame has no call before it
            print(f"\"{variant}\",{len(rows)},{statistics.median(r['seconds'] for r in later) * 1e3:.2f},"
                  f"{statistics.median(r['draw_seconds'] for r in later) * 1e3:.2f},"
                  f"{statistics.median(r.get('between_calls_seconds', 0.0) for r in later) * 1e3:.2f},"
                  f"{statistics.median(taking) * 1e3 if taking else 0.0:.2f},"
                  f"{sum(r['seconds'] for r in rows) * 1e3:.1f}")

if __name__ == "__main__":
    main()
