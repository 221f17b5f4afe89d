"""Opens an interactive viewer in the browser that plays, pauses, scrubs and orbits through the time
series of the files named.

    headrace view FILE... [--port P] [--host H]

Serves one page at http://HOST:PORT/ where each browser plays, pauses, steps, scrubs and orbits through the
files' time series, streamed by the engine and rendered on the server (the GPU, or the CPU reference at
a lower resolution when there is none, said on the page), with the engine's numbers beside the image:
GB/s against the disk and host-to-device ceilings, the frame time by kind of work, bytes from the page
cache and from the disk, the path taken. Points (the ``particles`` record of 8 float32, or any point set:
a position field or x, y, z fields; docs/particles.md) draw as sphere glyphs, grids and AMR as volumes, a flow
series as a lattice of glyphs coloured by speed; ``--pathlines PATHS.npz`` draws the paths ``headrace trace
--pathlines`` wrote over every frame, each up to the frame's time. Only the files named here are served; it binds to 127.0.0.1
unless ``--host`` says otherwise. docs/viewer.md has the page's controls and the protocol.
"""

from __future__ import annotations

import argparse

from headrace.cli._shared import Device, Host, Integer, Path as PathArgument, Real, Size

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction, summary: str) -> None:
    parser = subparsers.add_parser("view", help=summary,
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", metavar="FILE", nargs="+", type=PathArgument(), help="particle, volume, AMR or flow containers")
    parser.add_argument("--port", type=Integer(0, 65535), default=8765, help="TCP port (default 8765; 0 picks a free one)")
    parser.add_argument("--host", type=Host(), default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 opens it to the network)")
    parser.add_argument("--device", type=Device(), default=None,
                        help="where to render (default: GPU 0 when there is one, else the CPU reference, said on the page)")
    parser.add_argument("--width", type=Integer(16, 8192, "pixels"), default=None,
                        help="image width (default 1024 on a GPU, 512 on the CPU)")
    parser.add_argument("--height", type=Integer(16, 8192, "pixels"), default=None,
                        help="image height (default 768 on a GPU, 384 on the CPU)")
    parser.add_argument("--quality", type=Integer(1, 100), default=85, help="JPEG quality of the images (default 85)")
    parser.add_argument("--fps", type=Real(0, 240, "frames/s"), default=30.0,
                        help="playback rate a page starts with (0: as fast as it goes; default 30)")
    parser.add_argument("--prefetch", type=Integer(1, 64, "frames"), default=3,
                        help="frames each browser's stream holds in memory, loaded ahead (default 3)")
    parser.add_argument("--footprint", type=Real(0, 64, "pixels"), default=0.0,
                        help="volumes: no ray step shorter than this many pixel footprints (0: every finest cell; default 0)")
    parser.add_argument("--disk-rate", type=Size(1 << 20, 1 << 40), default=None, dest="disk_rate", metavar="RATE",
                        help="the disk's read rate for the panel, bytes/s (default: a short probe of the first file's folder)")
    parser.add_argument("--pathlines", type=PathArgument(), default=None, metavar="PATHS.npz",
                        help="pathlines drawn over every frame up to its time, coloured by speed "
                             "(the .npz of `headrace trace SERIES --pathlines --out PATHS.npz`)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from headrace.viewer import ViewerServer  # loads aiohttp, heavy: only when the viewer is started

    server = ViewerServer(args.files, device="auto" if args.device is None else args.device, width=args.width,
                          height=args.height, quality=args.quality, fps=args.fps, prefetch=args.prefetch,
                          footprint=args.footprint, disk_rate=None if args.disk_rate is None else float(args.disk_rate),
                          pathlines=args.pathlines)
    server.run(args.host, args.port)
    return 0
