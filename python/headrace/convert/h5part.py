"""H5Part particle series through h5py (format ``h5part``).

Root groups ``Step#N`` in order of N are the frames. Datasets ``x``, ``y`` and ``z`` of a step become
field ``position`` (3 components, their common type); every other dataset of the step (``(n,)`` or
``(n, c)``) a field of its own name, in natural order. A step's datasets hold one value per particle, the
same count each (0: an empty frame); a step without datasets is empty too. Subgroups of a step (H5Block's
fields) are not read. Frame time: the step's numeric ``TimeValue`` attribute (H5Part's), else ``time``,
else N; bounding box: that of the positions (one more read of x, y, z).

Element types are kept in native byte order; float16 becomes float32 and bool uint8; others are refused.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from headrace import errors
from headrace.convert import _arrays
from headrace.convert._arrays import FrameShape, Selection, array_pieces, bad_dataset, stored_dtype
from headrace.convert.hdf5_file import OpenFiles, dataset_reader, open_hdf5_file, show_names, time_attribute
from headrace.convert.source import AttributeValue, BBox, FieldInfo, Piece, SourceFrame, bad_data, natural_key

__all__ = ["H5PartSource", "open_h5part", "is_h5part_file"]

_STEP_GROUP = re.compile(r"Step#(\d+)")
_POSITION = ("x", "y", "z")


def is_h5part_file(file: Any) -> bool:
    """Whether an open HDF5 file holds H5Part step groups (``Step#N`` at the root)."""
    return any(_STEP_GROUP.fullmatch(key) for key in file)


@dataclass(frozen=True)
class _Step:
    """One ``Step#N`` group: its datasets (name -> shape, dtype) and particle count."""

    path: Path
    group: str
    number: int
    time: float
    datasets: dict[str, tuple[tuple[int, ...], np.dtype]]
    particles: int


class H5PartSource:
    """H5Part particle steps, one per frame; see :func:`open_h5part`."""

    def __init__(self, path: Path, fields: list[FieldInfo], steps: list[_Step], has_position: bool) -> None:
        self.path = path
        self.fields = fields
        self._steps = steps
        self._has_position = has_position
        self.frame_count = len(steps)
        bytes_per_particle = sum(info.dtype.itemsize * info.components for info in fields)
        self.total_bytes = sum(step.particles for step in steps) * bytes_per_particle
        self.attributes: dict[str, AttributeValue] = {"source_format": "h5part", "source_path": os.fspath(path)}

    def frames(self) -> Iterator[SourceFrame]:
        files = OpenFiles()
        try:
            for step in self._steps:
                group = files.get(step.path)[step.group] if step.datasets else None
                bbox = _position_bbox(step, group) if self._has_position and group is not None else None
                yield SourceFrame(time=step.time, bbox=bbox, pieces=self._pieces(step, group))
        finally:
            files.close()

    def _pieces(self, step: _Step, group: Any) -> Iterator[Piece]:
        for info in self.fields:
            if group is None:  # a step without datasets: an empty frame
                yield Piece(info.name, np.empty((0, info.components), info.dtype), 0)
                continue
            if info.name == "position" and self._has_position:
                read = _positiondataset_reader(step.path, [group[axis] for axis in _POSITION])
            else:
                read = dataset_reader(step.path, group[info.name])
            yield from array_pieces(info.name, FrameShape((step.particles,), info.components, None), info.dtype, read)


def _positiondataset_reader(path: Path, axes: list[Any]) -> Callable[[Selection], np.ndarray]:
    readers = [dataset_reader(path, dataset) for dataset in axes]
    return lambda selection: np.stack([read(selection) for read in readers], axis=1)


def _position_bbox(step: _Step, group: Any) -> BBox | None:
    """Bounding box of the step's positions, read a slab at a time; ``None`` unless finite."""
    low = np.full(3, np.nan)
    high = np.full(3, np.nan)
    read = _positiondataset_reader(step.path, [group[axis] for axis in _POSITION])
    for selection in _arrays.slabs((step.particles,), 3 * 8):
        positions = read(selection)
        # fmin/fmax skip NaNs: a coordinate is NaN only where every value seen so far is NaN.
        low = np.fmin(low, np.fmin.reduce(positions, axis=0))
        high = np.fmax(high, np.fmax.reduce(positions, axis=0))
    if not (np.isfinite(low).all() and np.isfinite(high).all()):
        return None
    return (tuple(float(v) for v in low), tuple(float(v) for v in high))  # type: ignore[return-value]


def _per_particle(shape: tuple[int, ...]) -> str:
    return "(n,)" if len(shape) == 1 else f"(n, {shape[1]})"


def _read_steps(path: Path) -> list[_Step]:
    """The file's ``Step#N`` groups in order of N, with their datasets checked for one count each."""
    # h5py (optional): loaded only when an HDF5 file is read
    import h5py  # type: ignore[import-untyped]

    steps = []
    with open_hdf5_file(path) as file:
        numbered = sorted((int(match.group(1)), key) for key in file if (match := _STEP_GROUP.fullmatch(key)))
        if not numbered:
            raise bad_data(errors.CorruptIndexError, path, 0, "H5Part step groups Step#0, Step#1, ...",
                           f"root members {show_names(sorted(file, key=natural_key))}")
        for number, key in numbered:
            group = file[key]
            datasets = {name: (tuple(node.shape), np.dtype(node.dtype)) for name, node in group.items()
                        if isinstance(node, h5py.Dataset)}
            names = sorted(datasets, key=natural_key)
            for name in names:
                shape = datasets[name][0]
                if len(shape) not in (1, 2):
                    raise bad_dataset(errors.BadDataError, path, f"dataset {group.name}/{name}",
                                      "one value (n,) or n components (n, c) per particle", f"shape {shape}")
                if shape[0] != datasets[names[0]][0][0]:
                    raise bad_dataset(errors.CorruptIndexError, path, f"dataset {group.name}/{name}",
                                      f"{datasets[names[0]][0][0]} particles as {group.name}/{names[0]} has",
                                      f"{shape[0]}")
            time = time_attribute(group)
            particles = datasets[names[0]][0][0] if names else 0
            steps.append(_Step(path, group.name, number, float(number) if time is None else time, datasets, particles))
    return steps


def open_h5part(paths: Sequence[os.PathLike | str]) -> H5PartSource:
    """Open H5Part files (steps of all of them, file after file) and check every step's datasets.

    Raises ``TruncatedFileError``, ``BadMagicError`` (not HDF5), ``CorruptIndexError`` (no step groups,
    steps whose datasets differ in names, types or components, datasets of one step with different
    counts), ``BadDataError`` (a type or shape a container cannot hold) and ``EmptyFieldError`` (no step
    holds a dataset).
    """
    files = [Path(path) for path in paths]
    if not files:
        raise errors.UsageError("no H5Part files given")
    steps = [step for path in files for step in _read_steps(path)]
    model = next((step for step in steps if step.datasets), None)
    if model is None:
        raise bad_data(errors.EmptyFieldError, files[0], 0, "a step holding datasets", "none")
    stored = {name: stored_dtype(dtype, model.path, f"dataset {model.group}/{name}")
              for name, (_, dtype) in model.datasets.items()}
    names = sorted(model.datasets, key=natural_key)
    has_position = all(axis in model.datasets for axis in _POSITION)
    fields = []
    if has_position:
        if "position" in model.datasets:
            raise bad_dataset(errors.CorruptIndexError, model.path, f"dataset {model.group}/position",
                              "x, y and z or a dataset 'position', not both", "both")
        dtype = np.result_type(*(stored[axis] for axis in _POSITION))
        fields.append(FieldInfo("position", stored_dtype(dtype, model.path, f"datasets {model.group}/x, y, z"), 3))
        if any(model.datasets[axis][0][1:] for axis in _POSITION):
            raise bad_dataset(errors.BadDataError, model.path, f"dataset {model.group}/x",
                              "one coordinate per particle (n,)", "several")
        names = [name for name in names if name not in _POSITION]
    for name in names:
        shape = model.datasets[name][0]
        fields.append(FieldInfo(name, stored[name], shape[1] if len(shape) == 2 else 1))
    for step in steps:
        if not step.datasets:
            continue
        if set(step.datasets) != set(model.datasets):
            missing = sorted(set(model.datasets) - set(step.datasets), key=natural_key)
            extra = sorted(set(step.datasets) - set(model.datasets), key=natural_key)
            raise bad_dataset(errors.CorruptIndexError, step.path, f"group {step.group}",
                              f"the datasets of {model.group} ({', '.join(sorted(model.datasets, key=natural_key))})",
                              "; ".join(part for part in (f"missing {', '.join(missing)}" if missing else "",
                                                          f"extra {', '.join(extra)}" if extra else "") if part))
        for name, (shape, dtype) in step.datasets.items():
            label = f"dataset {step.group}/{name}"
            if stored_dtype(dtype, step.path, label) != stored[name]:
                raise bad_dataset(errors.CorruptIndexError, step.path, label,
                                  f"dtype {stored[name]} as {model.group}/{name} has", f"dtype {dtype}")
            if shape[1:] != model.datasets[name][0][1:]:
                raise bad_dataset(errors.CorruptIndexError, step.path, label,
                                  f"shape {_per_particle(model.datasets[name][0])} as {model.group}/{name} has",
                                  f"shape {shape}")
    return H5PartSource(files[0], fields, steps, has_position)
