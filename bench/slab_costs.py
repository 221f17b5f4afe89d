"""Where a sort-last volume frame's drawing goes, slab by slab, on one GPU (issue 37: the heavy AMR frame).

    python3 bench/slab_costs.py FILE [--device 0] [--opacity ramp:0.1,1,0.2]

For 1, 2 and 4 slabs (``VolumeTopology.cut_slabs``), each slab's renderer is made, its runs loaded into GPU
memory once, and its layer drawn 5 times (``VolumeRenderer.draw_layer``, the sort-last path): the median
seconds of a draw, the pixels its layer covers (alpha > 0) and the pixels it makes opaque (alpha >= 0.99),
beside the whole frame's draw. Slabs drawn one after the other on one GPU, so nothing else shares it.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import headrace
from headrace import _ext
from headrace.workloads.chunks import read_chunks
from headrace.workloads.volume.renderer import VolumeRenderer
from headrace.workloads.volume.sort_last import chunks_holding


def timed_draws(renderer: VolumeRenderer, buffer: object, stream: object, repeats: int = 5) -> float:
    seconds = []
    for _ in range(repeats + 1):
        started = time.perf_counter()
        renderer.draw_layer(buffer, stream.handle)  # type: ignore[attr-defined]
        stream.synchronize()  # type: ignore[attr-defined]
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--opacity", default="ramp:0.1,1,0.2")
    args = parser.parse_args()
    ds = headrace.open(args.file)
    stream = _ext.CudaStream(args.device)
    for count in (1, 2, 4):
        renderer = VolumeRenderer(ds, device=args.device, opacity=args.opacity)
        slabs = renderer.topology.cut_slabs(count)
        parts = []
        for first, last in slabs:
            renderer = VolumeRenderer(ds, device=args.device, opacity=args.opacity)
            positions, held = chunks_holding(ds.container, 0, renderer.field, renderer.topology.slab_cells(first, last),
                                             ds.chunk_columns)
            if count > 1:
                renderer.share_slab(first, last, held)
            cells = int(held[:, 1].sum())
            buffer = read_chunks(ds, 0, renderer.field, positions, args.device, cells * 4)
            seconds = timed_draws(renderer, buffer, stream)
            alpha = renderer.layer_of(buffer, stream.handle)[..., 3]
            parts.append(f"layers {first}-{last} {seconds * 1e3:.1f} ms (covers {np.mean(alpha > 0):.2f}, "
                         f"opaque {np.mean(alpha >= 0.99):.2f})")
        print(f"{count} slab(s), opacity {args.opacity}: " + "; ".join(parts), flush=True)


if __name__ == "__main__":
    main()
