"""What handing a streamed grid out in its natural shape costs (issue 35): a flow field in native blocks,
streamed hot into GPU memory with every default (``ds.stream(device=0)``, each field taken with
``cupy.from_dlpack`` and its frame released on the consumer's stream), against the same stream with
``stored_order=True`` (the elements as stored, no gather) and a grid-order volume (a view, no gather),
each as GB/s of the frames' bytes, in one process, alternating, through the harness's clock.

    python3 -m headrace.bench.cases.grid_order BLOCKED.hrc LINEAR.hrc [--repeats 5] [--csv out.csv]
"""

from __future__ import annotations

import argparse
import functools

import headrace
from headrace.bench.harness import measure, warm_page_cache, write_csv

__all__ = ["main", "stream_all"]


def stream_all(path: str, stored_order: bool = False) -> int:
    """One pass over the file's frames (grids in read()'s shape, or as stored); the bytes handed to the consumer."""
    import cupy  # type: ignore[import]  # GPU machines only

    ds = headrace.open(path)
    moved = 0
    with ds.stream(device=0, stored_order=stored_order) as frames:
        for frame in frames:
            for name in frame.fields:
                array = cupy.from_dlpack(frame[name])
                moved += array.nbytes
            frame.release(stream=cupy.cuda.get_current_stream().ptr)
    cupy.cuda.get_current_stream().synchronize()
    return moved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("blocked")
    parser.add_argument("linear")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--csv", default=None)
    args = parser.parse_args(argv)
    cases = {"blocks, natural (gathered)": (args.blocked, False),
             "blocks, stored_order=True": (args.blocked, True),
             "linear volume, natural (a view)": (args.linear, False)}
    for path, stored_order in cases.values():
        warm_page_cache([path])
        stream_all(path, stored_order)  # the engine made, the file page-locked, the kernels loaded: once
    results = []
    for _ in range(args.repeats):  # alternating, so drift touches every case alike
        for case, (path, stored_order) in cases.items():
            results.append(measure(case, functools.partial(stream_all, path, stored_order), files=[path], cache="hot", repeats=1))
    for case in cases:
        runs = [m for m in results if m.case == case]
        seconds = [s for m in runs for s in m.seconds]
        gbps = sorted(runs[0].bytes / s / 1e9 for s in seconds)
        print(f"{case:<34} median {gbps[len(gbps) // 2]:6.2f} GB/s  [{gbps[0]:.2f} .. {gbps[-1]:.2f}]  "
              f"{runs[0].bytes / 1e9:.2f} GB a pass", flush=True)
    if args.csv:
        write_csv(args.csv, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
