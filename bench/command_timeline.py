"""When each part of a command's wall happens, as milliseconds from the process's start: a `headrace` command run in a
fresh child process, run as the ``headrace`` script runs it (its context's thread started as ``import headrace``
begins), with stamps at its steps (the interpreter up, ``import headrace``, the context made and let go, the engine,
the file added, each frame, the image read back, written, the engine let go, the interpreter's exit handlers), and the
child's end as this process sees it. ``--bare`` runs the bare start instead (interpreter,
``import headrace``, a CUDA context), stamped alike. Usage::

    python3 bench/command_timeline.py [--rounds 3] -- render FILE --frame 0 --out IMG.png --stats
    python3 bench/command_timeline.py --bare

One CSV row a stamp (round, stamp, ms), the last of each round ``ended`` (the parent's wait returned).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

CHILD = r"""
import os, sys, time, atexit, threading
zero = float(os.environ["HEADRACE_TIMELINE_ZERO"])
stamps = []
def stamp(name):
    stamps.append((name, (time.time() - zero) * 1e3))
stamp("interpreter")
def report():
    stamp("exit handlers")
    sys.stderr.write("".join(f"@@ {name},{ms:.1f}\n" for name, ms in stamps))
    sys.stderr.flush()
atexit.register(report)  # registered first: runs last
if sys.argv[1] == "--bare":
    import headrace
    from headrace import _ext
    stamp("import headrace")
    _ext.CudaStream(0)
    stamp("context")
    sys.exit(0)
# The interpreter's words as the headrace script's: the package starts the context's thread as it loads.
sys.orig_argv = [sys.executable, "headrace", *sys.argv[1:]]
import headrace.cli
from headrace import _gpu_ahead
stamp("import headrace")

def wrap(owner, name, before=None, after=None):
    original = getattr(owner, name)
    def wrapped(*args, **kwargs):
        if before:
            stamp(before)
        result = original(*args, **kwargs)
        if after:
            stamp(after)
        return result
    setattr(owner, name, wrapped)

def watch_context():  # the context made ahead: polled, the thread's own code is not touched
    while not _gpu_ahead._held:
        time.sleep(0.0005)
    stamp("context made ahead")
    while _gpu_ahead._held:
        time.sleep(0.0005)
    stamp("context let go")

threading.Thread(target=watch_context, daemon=True).start()
# The stamps' hooks: the command's own modules load here rather than after its words are parsed.
from headrace import engine, imaging
from headrace.workloads.particles import streaming
wrap(streaming.StreamingRenderer, "__init__", "renderer: start", "renderer: made")
wrap(engine.Engine, "add_file", "engine made; file: start", "file added")
add_file = engine.Engine.add_file
def add_file_said(self, path):
    file = add_file(self, path)
    import re
    locked = re.search(r"page-locked \(.*?\) in ([0-9.]+) s", self.queue.describe())
    if locked:  # the registration's own time, from the queue's note, as a row of its own
        stamps.append(("page-locking took (ms; not a stamp)", float(locked.group(1)) * 1e3))
    return file
engine.Engine.add_file = add_file_said
wrap(streaming.StreamingRenderer, "render", "frame: start", "frame: drawn")
wrap(streaming.StreamingRenderer, "image", None, "image read back")
wrap(imaging, "write_image", "PNG: start", "PNG: written")
wrap(engine, "release_file", "release file: start", "release file: done")
wrap(headrace, "release_engines", None, "engines released")
sys.argv = ["headrace", *sys.argv[1:]]
code = headrace.cli.run_command()  # as the headrace script runs it
stamp("command returned")
sys.exit(code)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bare", action="store_true", help="the bare start instead of a command")
    parser.add_argument("command", nargs="*", help="the headrace command's words (after --)")
    args = parser.parse_args()
    words = ["--bare"] if args.bare else args.command
    if not words:
        parser.error("a command after --, or --bare")
    print("round,stamp,ms")
    for round_ in range(1, args.rounds + 1):
        zero = time.time()
        child = subprocess.run([sys.executable, "-c", CHILD, *words], capture_output=True, text=True,
                               env={**os.environ, "HEADRACE_TIMELINE_ZERO": repr(zero)})
        ended = (time.time() - zero) * 1e3
        if child.returncode != 0:
            sys.stderr.write(child.stdout + child.stderr)
            raise SystemExit(f"round {round_}: exit {child.returncode}")
        for line in child.stderr.splitlines():
            if line.startswith("@@ "):
                print(f"{round_},{line[3:]}")
        print(f"{round_},ended,{ended:.1f}")


if __name__ == "__main__":
    main()
