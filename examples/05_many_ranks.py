"""Many ranks over MPI, from Python: every rank draws a slab of one AMR frame, composited front to back on
rank 0, and traces a block of the seeds, lines handed to the rank that holds the blocks they need. Rank 0
checks both against one renderer and one tracer. Under a launcher it is a job of several ranks; alone, a
job of one:

    mpiexec -n 4 python3 examples/05_many_ranks.py [OUT_DIR]
    python3 examples/05_many_ranks.py [OUT_DIR]

On the CPU here (device="cpu"); device=0 gives each rank a GPU of its node by its local rank.
"""

import sys
from pathlib import Path

import numpy as np

from headrace.distributed import fail_together
from headrace.generate import generate_amr, generate_flow
from headrace.imaging import write_image
from headrace.workloads import streamlines
from headrace.workloads.volume import VolumeRenderer, VolumeSlabs

out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
amr, flow = out / "example-amr.hrc", out / "example-flow.hrc"
with fail_together("example 05") as job:  # a rank that fails stops every rank, with its reason
    if job.root:
        generate_amr(amr, cells=200_000, levels=2, frames=1, seed=1, chunk_size_bytes=1 << 15)
        generate_flow(flow, dims=(33, 33, 41), block=(8, 8, 8), seed=2)
    job.barrier()
    image, stats = VolumeSlabs(amr, device="cpu", width=320, height=240).render(0)
    seeds = streamlines.uniform_seeds(flow, 400)
    lines = streamlines.trace_handed(flow, seeds, steps=300, direction="both", device="cpu")
    shares = job.gather(stats)
    if job.root:
        assert image is not None and lines is not None and shares is not None
        one = VolumeRenderer(amr, device="cpu", width=320, height=240).render(0)
        off = (np.abs(image[..., :3].astype(int) - one[..., :3].astype(int)) > 2).mean()
        assert off <= 0.002, f"{off:.2%} of the channels differ from one renderer's by more than 2 levels"
        whole = streamlines.trace_run(flow, seeds, steps=300, direction="both", device="cpu")
        assert np.array_equal(lines.points, whole.points) and np.array_equal(lines.offsets, whole.offsets)
        write_image(out / "example-amr.png", image)
        for s in shares:
            print(f"rank {s['rank']}: region layers {s['layers'][0]} to {s['layers'][1]}, {s['cells']:,} cells read")
        print(f"{job.size} rank(s): the AMR frame composited as one renderer draws it -> {out / 'example-amr.png'}; "
              f"{len(seeds)} streamlines, {lines.stats['lines_handed']} half-lines handed between ranks, one tracer's "
              "points")
