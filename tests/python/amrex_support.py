"""AMReX plotfiles of our own making for the converter tests, and the values a conversion must give.

:func:`write_plotfile` writes ``Header``, ``Level_N/Cell_H`` and the FAB files ``Level_N/Cell_D_*`` in
AMReX's format (``AMReX_PlotFileUtil.cpp``'s ``WriteGenericPlotfileHeader``, ``AMReX_VisMF.cpp``'s
header, ``AMReX_FArrayBox.cpp``'s FAB header line) from seeded NumPy arrays. :func:`composite` paints
those arrays, and :func:`brick_composite` a converted frame's bricks, onto the finest level's cells, so a
test compares every leaf cell without the converter's own brick arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from headrace.amr import AmrTopology

Box = tuple[tuple[int, int, int], tuple[int, int, int]]  # lower inclusive, upper exclusive, x y z

GHOST_VALUE = 1.0e30  # what ghost cells hold: a value that shows if a converter keeps them

# Three levels over a domain of 8 x 6 x 4 level-0 cells whose lower corner is not cell 0; ratios 2 then 4.
# Level 1's two boxes nest in level 0's two; level 2's two boxes nest in level 1's, one across both.
THREE_LEVELS: list[list[Box]] = [
    [((4, -2, 0), (8, 4, 4)), ((8, -2, 0), (12, 4, 4))],
    [((10, -2, 0), (16, 4, 8)), ((16, -2, 2), (20, 2, 6))],
    [((44, -8, 4), (52, 0, 12)), ((60, -4, 12), (68, 4, 20))],
]
THREE_LEVELS_DOMAIN = ((4, -2, 0), (12, 4, 4))
THREE_LEVELS_REFINEMENT = (2, 4)


@dataclass(frozen=True)
class PlotfileData:
    """A written plotfile: per level its boxes and each box's values ``(variables, z, y, x)`` (valid cells,
    the stored element type, native byte order)."""

    path: Path
    boxes: list[list[Box]]
    values: list[list[np.ndarray]]
    refinement: tuple[int, ...]
    domain: Box


def box_text(box: Box) -> str:
    (lo, hi) = box
    return f"(({lo[0]},{lo[1]},{lo[2]}) ({hi[0] - 1},{hi[1] - 1},{hi[2] - 1}) (0,0,0))"


def real_descriptor(dtype: np.dtype) -> str:
    """The FAB header's RealDescriptor for IEEE ``dtype`` (its byte order included)."""
    dtype = np.dtype(dtype)
    size = dtype.itemsize
    real_format = "64 11 52 0 1 12 0 1023" if size == 8 else "32 8 23 0 1 9 0 127"
    little = dtype.byteorder == "<" or (dtype.byteorder in "=|" and np.little_endian)
    order = range(size, 0, -1) if little else range(1, size + 1)
    return f"((8, ({real_format})),({size}, ({' '.join(str(v) for v in order)})))"


def _scaled(box: Box, scale: int) -> Box:
    lo, hi = box
    return tuple(v * scale for v in lo), tuple(v * scale for v in hi)  # type: ignore[return-value]


def write_plotfile(path: Path, boxes: list[list[Box]] = THREE_LEVELS, *, domain: Box = THREE_LEVELS_DOMAIN,
                   refinement: tuple[int, ...] = THREE_LEVELS_REFINEMENT, variables=("density", "temperature"),
                   time: float = 0.0, prob_lo=(-1.0, 0.0, 2.0), prob_hi=(3.0, 3.0, 4.0), dtype="<f8", ghosts=(0, 0, 0),
                   fabs_per_file: int = 2, seed: int = 0, version: str = "HyperCLaw-V1.1",
                   bounds_from_cell_zero: bool = False) -> PlotfileData:
    """Write a plotfile folder at ``path`` whose level ``l`` holds ``boxes[l]`` (cells of that level, in the
    file's indices) with seeded values of ``dtype``; ``ghosts`` cells around each box hold :data:`GHOST_VALUE`;
    ``fabs_per_file`` FABs share a data file. The Header's box bounds are measured from the domain's lower
    corner as ``WriteMultiLevelPlotfile`` writes them, or from cell 0 as ``AmrLevel`` codes do."""
    dtype = np.dtype(dtype)
    native = dtype.newbyteorder("=")
    rng = np.random.default_rng(seed)
    scales = [math.prod(refinement[:level]) for level in range(len(boxes))]
    domains = [_scaled(domain, s) for s in scales]
    cells = [b - a for a, b in zip(*domain)]
    sizes = [[(h - l) / (n * s) for l, h, n in zip(prob_lo, prob_hi, cells)] for s in scales]
    values = [[rng.uniform(-50, 50, (len(variables), hi[2] - lo[2], hi[1] - lo[1], hi[0] - lo[0])).astype(native)
               for lo, hi in level] for level in boxes]

    path.mkdir(parents=True)
    lines = [version, str(len(variables)), *variables, "3", repr(time), str(len(boxes) - 1),
             " ".join(repr(v) for v in prob_lo) + " ", " ".join(repr(v) for v in prob_hi) + " ",
             "".join(f"{r} " for r in refinement), "".join(box_text(d) + " " for d in domains),
             "".join("10 " for _ in boxes), *(" ".join(repr(h) for h in size) + " " for size in sizes), "0", "0"]
    for level, level_boxes in enumerate(boxes):
        lines += [f"{level} {len(level_boxes)} {time!r}", "10"]
        corner = (0, 0, 0) if bounds_from_cell_zero else domains[level][0]
        for lo, hi in level_boxes:
            for axis in range(3):
                low = prob_lo[axis] + (lo[axis] - corner[axis]) * sizes[level][axis]
                high = prob_lo[axis] + (hi[axis] - corner[axis]) * sizes[level][axis]
                lines.append(f"{low!r} {high!r}")
        lines.append(f"Level_{level}/Cell")
        _write_level(path / f"Level_{level}", level_boxes, values[level], dtype, ghosts, fabs_per_file)
    (path / "Header").write_text("\n".join(lines) + "\n")
    return PlotfileData(path, boxes, values, tuple(refinement), domain)


def _write_level(folder: Path, boxes: list[Box], values: list[np.ndarray], dtype: np.dtype,
                 ghosts: tuple[int, int, int], fabs_per_file: int) -> None:
    """``Cell_H`` and the FAB files of one level, as VisMF::Write (version 1, NFiles) lays them out."""
    folder.mkdir()
    places = []
    files: dict[str, bytearray] = {}
    for index, (box, data) in enumerate(zip(boxes, values)):
        lo, hi = box
        grown = (tuple(v - g for v, g in zip(lo, ghosts)), tuple(v + g for v, g in zip(hi, ghosts)))
        gx, gy, gz = ghosts
        stored = np.full((data.shape[0], data.shape[1] + 2 * gz, data.shape[2] + 2 * gy, data.shape[3] + 2 * gx),
                         GHOST_VALUE, data.dtype)
        stored[:, gz:gz + data.shape[1], gy:gy + data.shape[2], gx:gx + data.shape[3]] = data
        name = f"Cell_D_{index // fabs_per_file:05d}"
        content = files.setdefault(name, bytearray())
        places.append((name, len(content)))
        content += f"FAB {real_descriptor(dtype)}{box_text(grown)} {data.shape[0]}\n".encode()
        content += stored.astype(dtype).tobytes()
    for name, content in files.items():
        (folder / name).write_bytes(bytes(content))
    ghost_text = str(ghosts[0]) if len(set(ghosts)) == 1 else f"({ghosts[0]},{ghosts[1]},{ghosts[2]})"
    components = values[0].shape[0]
    lines = ["1", "1", str(components), ghost_text, f"({len(boxes)} 0", *(box_text(b) for b in boxes), ")",
             str(len(boxes)), *(f"FabOnDisk: {name} {offset}" for name, offset in places), ""]
    for extreme in (np.min, np.max):
        lines.append(f"{len(boxes)},{components}")
        lines += ["".join(f"{float(extreme(data[c])):.17e}," for c in range(components)) for data in values]
        lines.append("")
    (folder / "Cell_H").write_text("\n".join(lines) + "\n")


def composite(data: PlotfileData, variable: int) -> np.ndarray:
    """One variable on the finest level's cells ``(z, y, x)`` over the domain: each level painted over the
    coarser ones, its cells repeated to the finest size; cells no box covers are NaN."""
    finest = math.prod(data.refinement)
    (lo, hi) = data.domain
    out = np.full([(hi[a] - lo[a]) * finest for a in (2, 1, 0)], np.nan, np.float32)
    for level, (boxes, values) in enumerate(zip(data.boxes, data.values)):
        scale = math.prod(data.refinement[:level])
        repeat = finest // scale
        for (blo, bhi), box_values in zip(boxes, values):
            fine = box_values[variable].astype(np.float32)
            for axis in range(3):
                fine = np.repeat(fine, repeat, axis=axis)
            start = [(blo[a] - lo[a] * scale) * repeat for a in (2, 1, 0)]
            out[start[0]:start[0] + fine.shape[0], start[1]:start[1] + fine.shape[1], start[2]:start[2] + fine.shape[2]] = fine
    return out


def brick_composite(topology: AmrTopology, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A converted frame's bricks on the finest level's cells ``(z, y, x)`` (NaN where none), and how many
    bricks cover each cell."""
    finest = topology.scale(topology.levels - 1)
    shape = [n * finest for n in reversed(topology.domain_cells)]
    out = np.full(shape, np.nan, np.float32)
    count = np.zeros(shape, np.int64)
    for block in topology.blocks(values):
        repeat = finest // topology.scale(block.level)
        fine = block.data
        for axis in range(3):
            fine = np.repeat(fine, repeat, axis=axis)
        z, y, x = (block.lower[a] * repeat for a in (2, 1, 0))
        region = (slice(z, z + fine.shape[0]), slice(y, y + fine.shape[1]), slice(x, x + fine.shape[2]))
        out[region] = fine
        count[region] += 1
    return out, count
