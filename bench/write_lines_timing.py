"""Times ``write_traced`` (.npz and .vtp) of a trace's lines, here against another version of
``headrace/workloads/streamlines/lines.py`` (``--before``, e.g. ``git show REV:python/headrace/workloads/
streamlines/lines.py > /tmp/before_lines.py``), alternating, median of ``--rounds``; checks both write the same.
``LINES.npz`` is a ``headrace trace ... --out LINES.npz`` of ``FLOW.hrc``."""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import tempfile
import time

import numpy as np

from headrace.workloads.streamlines import lines as after
from headrace.workloads.streamlines.tracer import TraceResult


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("lines")
    parser.add_argument("flow")
    parser.add_argument("--before", required=True, help="the other lines.py")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("before_lines", args.before)
    assert spec and spec.loader
    before = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(before)
    saved = np.load(args.lines)
    result = TraceResult(saved["points"], saved["offsets"], list(saved["ends"]),
                         {"file": args.flow, "frame": 0, "direction": "forward"}, saved["IntegrationTime"])
    folder = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(args.lines)))
    for suffix in (".npz", ".vtp"):
        seconds: dict[str, list[float]] = {"before": [], "after": []}
        for _ in range(args.rounds):
            for name, module in (("before", before), ("after", after)):
                start = time.perf_counter()
                module.write_traced(os.path.join(folder, name + suffix), result)
                seconds[name].append(time.perf_counter() - start)
        b, a = statistics.median(seconds["before"]), statistics.median(seconds["after"])
        paths = [os.path.join(folder, name + suffix) for name in ("before", "after")]
        if suffix == ".npz":
            old, new = (np.load(p) for p in paths)
            same = sorted(old.files) == sorted(new.files) and all(np.array_equal(old[k], new[k]) for k in old.files)
        else:
            same = open(paths[0], "rb").read() == open(paths[1], "rb").read()
        print(f"{suffix}: {len(result.points):,} points, {os.path.getsize(paths[1]) / 1e6:.0f} MB: before {b:.2f} s, "
              f"after {a:.2f} s ({b / a:.2f} x); the same {'arrays' if suffix == '.npz' else 'bytes'}: {same}")
        for p in paths:
            os.unlink(p)
    os.rmdir(folder)


if __name__ == "__main__":
    main()
