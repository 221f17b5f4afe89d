"""What a one-frame render process's end costs, part by part: a child renders FILE's frame 0 as ``headrace render``
does (the context made and held, the engine let go after the frame), then ends one of three ways, each timed by
this process from the child's last stamp to its end:

- ``exit``: returns, as the command does (the interpreter's finalisation, then the driver's and the kernel's teardown);
- ``drop``: lets go of every GPU object itself first (the renderer, the engines, the held context), each timed,
  then returns;
- ``_exit``: ``os._exit(0)`` after the drops: the kernel's and the driver's teardown of the process alone;
- ``_exit, context held``: ``os._exit(0)`` with the context still held (the kernel's teardown of a live context).

Usage: ``python3 bench/exit_parts.py FILE [--rounds 3]``; CSV rows (round, way, part, ms).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

CHILD = r"""
import gc, os, sys, time
way, path = sys.argv[1], sys.argv[2]
def stamp(part):
    print(f"{part},{time.time():.6f}", flush=True)
import headrace
from headrace import _ext, engine
from headrace.workloads import particles
held = _ext.CudaStream(0)  # as the command's context made ahead, held for the process's life
renderer = particles.StreamingRenderer(path, device=0, segments=16)
renderer.render(0)
image = renderer.image()
stamp("frame")
del renderer
engine.release_file(path)
headrace.release_engines()
stamp("engines released")
if way == "_exit, context held":
    gc.collect()
    stamp("collected")
    os._exit(0)
if way != "exit":
    gc.collect()
    stamp("collected")
    del held
    gc.collect()
    stamp("context let go")
    if way == "_exit":
        os._exit(0)
stamp("returning")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print("round,way,part,ms")
    for round_ in range(1, args.rounds + 1):
        for way in ("exit", "drop", "_exit", "_exit, context held"):
            child = subprocess.Popen([sys.executable, "-c", CHILD, way, args.file], stdout=subprocess.PIPE, text=True)
            stamps = [line.strip().split(",") for line in child.stdout]
            child.wait()
            ended = time.time()
            if child.returncode != 0:
                raise SystemExit(f"round {round_} {way}: exit {child.returncode}")
            for (part, at), (_, before) in zip(stamps[1:], stamps):
                print(f"{round_},\"{way}\",{part},{(float(at) - float(before)) * 1e3:.1f}")
            print(f"{round_},\"{way}\",ended after the last stamp,{(ended - float(stamps[-1][1])) * 1e3:.1f}")


if __name__ == "__main__":
    main()
