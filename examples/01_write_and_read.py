"""Write a small time series of particles as a container, then read a frame back.

    python examples/01_write_and_read.py [OUT_DIR]
"""

import sys
from pathlib import Path

import numpy as np

import headrace

out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
path = out / "example-particles.hrc"
rng = np.random.default_rng(0)
frames = [rng.random((10_000, 8), dtype=np.float32) for _ in range(4)]

with headrace.Writer(path, [headrace.FieldSpec("particles", "float32", 8)], codec="lz4") as writer:
    for t, particles in enumerate(frames):
        frame = writer.add_frame(time=float(t), bbox=((0, 0, 0), (1, 1, 1)))
        writer.write(frame, "particles", particles)

ds = headrace.open(path)
print(ds)
third = ds.read(2, "particles")
assert np.array_equal(third, frames[2])
print(f"frame 2: {third.shape[0]} particles, stored {ds.stored_bytes} of {ds.raw_bytes} raw bytes")
