"""Where a `headrace render FILE --frame 0` process spends its wall, part by part, in one fresh process: the
imports, opening the file, the renderer's making (the engine, the file added and page-locked, the
renderer), each of `--frames` renders of the same frame (the first as the command times it, then warm),
the image brought to the host, its PNG, and the engine let go (the file unpinned, as at exit). Usage: ``python3 bench/render_parts.py FILE [--frames 3]
[--segments S --batch B --method M]``; one CSV row a part on stdout."""

from __future__ import annotations

import time

started = time.perf_counter()

import argparse  # noqa: E402

import headrace  # noqa: E402
from headrace import imaging  # noqa: E402
from headrace.workloads import particles  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file")
    parser.add_argument("--frames", type=int, default=3)
    parser.add_argument("--segments", type=int, default=16)
    parser.add_argument("--batch", type=int, default=1 << 20)
    parser.add_argument("--method", default="auto")
    parser.add_argument("--device", default="0")
    args = parser.parse_args()
    device = args.device if args.device == "cpu" else int(args.device)
    parts: list[tuple[str, float, str]] = [("imports", time.perf_counter() - started, "")]
    at = time.perf_counter()

    def lap(name: str, note: str = "") -> None:
        nonlocal at
        now = time.perf_counter()
        parts.append((name, now - at, note))
        at = now

    ds = headrace.open(args.file)
    lap("open")
    renderer = particles.StreamingRenderer(ds, method=args.method, device=device, batch=args.batch, segments=args.segments)
    lap("renderer", renderer.describe())
    for n in range(args.frames):
        stats = renderer.render(0)
        lap(f"render-{n}", f"frame {stats['seconds'] * 1e3:.1f} ms, drawing {stats['draw_seconds'] * 1e3:.1f} ms, "
                           f"h2d {stats['h2d_seconds'] * 1e3:.1f} ms, {stats['batches']} batches, "
                           f"{stats['segment_waits']} waits, {stats['stored_bytes'] / 1e6:.0f} MB")
        image = renderer.image()
        lap(f"image-{n}")
    imaging.write_image("build/render-parts.png", image)
    lap("png")
    del renderer
    headrace.release_engines()  # what the process's exit pays: the file unpinned, staging freed
    lap("teardown")
    print("part,seconds,note")
    for name, seconds, note in parts:
        print(f"{name},{seconds:.4f},\"{note}\"")
    print(f"total,{time.perf_counter() - started:.4f},")


if __name__ == "__main__":
    main()
