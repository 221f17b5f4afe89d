"""Render-only frames per second of a volume under several settings (issue 18's renderer study): where
the renderer's time goes, measured on a resident frame (CUDA events), one line per setting.

    python3 bench/volume_render_rates.py FILE [--device 0] [--frame 0]
"""

from __future__ import annotations

import argparse

from headrace.volume import VolumeRenderer

SETTINGS = [
    ("1024x768, dvr", dict(width=1024, height=768)),
    ("1024x768, dvr, footprint 1", dict(width=1024, height=768, footprint=1.0)),
    ("1024x768, dvr, sampling 2", dict(width=1024, height=768, sampling=2.0)),
    ("1024x768, dvr, no skipping", dict(width=1024, height=768, skip_empty=False)),
    ("1024x768, iso", dict(width=1024, height=768, mode="iso")),
    ("1024x768, iso, footprint 1", dict(width=1024, height=768, mode="iso", footprint=1.0)),
    ("512x384, dvr, footprint 1", dict(width=512, height=384, footprint=1.0)),
    ("1920x1080, dvr", dict(width=1920, height=1080)),
    ("1920x1080, dvr, footprint 1", dict(width=1920, height=1080, footprint=1.0)),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file")
    parser.add_argument("--device", default="0")
    parser.add_argument("--frame", type=int, default=0)
    args = parser.parse_args()
    device = "cpu" if args.device == "cpu" else int(args.device)
    for name, options in SETTINGS:
        renderer = VolumeRenderer(args.file, device=device, **options)
        fps = renderer.render_only_fps(args.frame, 5)
        print(f"{name:>32}: {fps:7.2f} frames/s ({1e3 / fps:7.1f} ms)", flush=True)


if __name__ == "__main__":
    main()
