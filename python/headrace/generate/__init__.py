"""Seeded synthetic data sets (``headrace generate``): each function writes a container, returns its path.

>>> from headrace.generate import generate_particles, generate_volume, generate_flow
>>> generate_particles("p.hrc", particles=1_000_000, frames=4, seed=0)
>>> generate_volume("v.hrc", dims=(64, 64, 64), frames=8)
>>> generate_flow("f.hrc", dims=(64, 64, 64), block=(16, 16, 16))
>>> generate_amr("a.hrc", cells=20_000_000, levels=4, frames=8)

The same seed and sizes always give the same values; every generator produces its data in bounded
slices, so a data set larger than memory can be generated.
"""

from __future__ import annotations

from headrace.generate.amr import generate_amr
from headrace.generate.flow import generate_flow
from headrace.generate.particles import generate_particles
from headrace.generate.volume import generate_volume

__all__ = ["generate_particles", "generate_volume", "generate_flow", "generate_amr"]
