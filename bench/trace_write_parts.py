"""Where writing a trace's lines goes: the velocities sampled at every point, their speeds, the .npz's
entries and its fsync, each timed alone (median of --rounds). LINES.npz is a ``headrace trace ... --out
LINES.npz`` of FLOW.hrc."""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

from headrace.workloads.streamlines import lines
from headrace.workloads.streamlines.tracer import TraceResult


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("lines")
    parser.add_argument("flow")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    saved = np.load(args.lines)
    result = TraceResult(saved["points"], saved["offsets"], list(saved["ends"]),
                         {"file": args.flow, "frame": 0, "direction": "forward"}, saved["IntegrationTime"])
    folder = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(args.lines)))
    parts: dict[str, list[float]] = {}

    def timed(name: str, work):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        out = work()
        parts.setdefault(name, []).append(time.perf_counter() - start)
        return out

    for _ in range(args.rounds):
        velocities = timed("velocities", lambda: result.velocities(0))
        speeds = timed("speeds", lambda: lines._speeds(velocities))
        arrays = {"points": result.points, "offsets": result.offsets, "IntegrationTime": np.asarray(result.times),
                  "Velocity": velocities, "Speed": speeds, "ends": np.array(result.ends)}
        path = os.path.join(folder, "parts.npz")
        with open(path, "wb") as out:
            timed("npz entries", lambda: lines._write_npz(out, arrays))
            timed("flush and fsync", lambda: (out.flush(), os.fsync(out.fileno())))
        timed("write_traced", lambda: lines.write_traced(path, result))
        os.unlink(path)
    os.rmdir(folder)
    size = sum(np.asarray(a).nbytes for a in arrays.values())
    print(f"{len(result.points):,} points, {size / 1e6:.0f} MB of arrays; medians of {args.rounds}: " +
          ", ".join(f"{name} {statistics.median(s):.3f} s" for name, s in parts.items()))


if __name__ == "__main__":
    main()
