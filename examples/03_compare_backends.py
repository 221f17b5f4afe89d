"""Read one container through every host backend available here and compare their throughput
(hot page cache; `headrace read --cache cold` and `headrace probe` for cold numbers and the ceiling).

    python examples/03_compare_backends.py [OUT_DIR]
"""

import sys
from pathlib import Path

from headrace.reading import available_backends, read_container
from headrace.generate import generate_particles

out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
path = str(generate_particles(out / "example-compare.hrc", particles=200_000, frames=2, seed=3))
for backend, why in available_backends(path).items():
    if why is not None:
        print(f"{backend:6s} unavailable: {why}")
        continue
    result = read_container(path, backend, "hot", repeats=2)
    print(f"{backend:6s} {result.best_gbps:6.2f} GB/s  ({result.parameters['describe']})")
