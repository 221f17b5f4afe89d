"""Generate a time-varying volume on a grid and look at its index: per-chunk value ranges let a
renderer skip chunks that hold nothing of interest (empty-space skipping).

    python examples/02_generate_and_inspect.py [OUT_DIR]
"""

import sys
from pathlib import Path

import numpy as np

import headrace
from headrace.generate import generate_volume

out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
path = generate_volume(out / "example-volume.hrc", dims=(32, 32, 32), frames=3, seed=1, chunk_size_bytes=8192)
ds = headrace.open(path)
print(ds, ds.attributes["grid_dims"])

container = ds.container
table = container.chunk_table()
threshold = 0.9
for frame in ds.frames:
    chunks = np.flatnonzero(table["frame"] == frame.index)
    useful = [int(c) for c in chunks if container.chunk_range(int(c))[1][0] >= threshold]
    print(f"frame {frame.index}: {len(useful)} of {len(chunks)} chunks reach {threshold}")
volume = ds.read(0, "scalar").reshape(tuple(reversed(ds.attributes["grid_dims"])))
print(f"frame 0 grid {volume.shape}, values {volume.min():.3f} .. {volume.max():.3f}")
