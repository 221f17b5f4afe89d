"""HDF5 datasets through h5py, picked by a pattern (one per frame).

**Datasets** (format ``hdf5``): each pattern (``density_*``, ``/step_*/density``; ``NAME=PATTERN`` names
the field) matches dataset paths segment by segment (``*``, ``?`` and ``[...]`` as in a shell, never
across ``/``; a leading ``/`` is optional). Its matches in natural order (``step_2`` before
``step_10``), file after file, are the frames of one field, named ``NAME`` or the first match's last
segment without its trailing frame number. Every pattern gives as many frames in each file. A dataset's
time axis (``time_axis``, a dimension label or scale named ``time``/``t``, or the ``(t, Z, Y, X[, c])``
rule of ``_arrays.array_layout``) gives a frame per step; each frame follows the npy reader: ``(n,)`` and
``(n, c)`` are elements, ``(Z, Y, X)`` and ``(Z, Y, X, c)`` grids (``grid_dims`` ``[X, Y, Z]``, origin 0,
spacing 1); a grid keeps its shape from frame to frame, an element list its components. Frame time: along
a time axis its scale's values or the dataset's ``time`` attribute of one value a step; else a numeric
``TimeValue`` or ``time`` attribute of the first field's dataset or of its group; else the file's root
``time`` (attribute, or a scalar or one-value-a-frame dataset: a file-per-step series); else the frame
index. Without a pattern, an H5Part file is read as H5Part, a file holding one dataset (a root ``time``
aside) converts it, and a file whose datasets fall into one step pattern (``/step0/rho``, ``/step1/rho``:
``/step*/rho``) converts that pattern, said once (a ``ConversionNote``); several such patterns are a
``UsageError`` naming them.

H5Part files (format ``h5part``) are read by :mod:`headrace.convert.h5part`.

Element types are kept in native byte order; float16 becomes float32 and bool uint8; others are refused.
"""

from __future__ import annotations

import fnmatch
import os
import re
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from headrace import errors
from headrace.convert import _arrays
from headrace.convert._arrays import FrameShape, array_pieces, bad_dataset, stored_dtype
from headrace.convert.h5part import H5PartSource, is_h5part_file, open_h5part
from headrace.convert.hdf5_file import OpenFiles, dataset_reader, open_hdf5_file, show_names, time_attribute, time_values
from headrace.convert.source import AttributeValue, BBox, ConversionNote, FieldInfo, Piece, SourceFrame, natural_key

__all__ = ["Hdf5Source", "open_hdf5"]


def _root_time(file: Any) -> np.ndarray | None:
    """The file's own times: a numeric root attribute ``time`` (any case), else a numeric root dataset
    ``time`` (a scalar, or one value per frame of the file)."""
    values = time_values(file, ("time",))
    if values is not None:
        return values
    dataset = _root_time_dataset(file)
    if dataset is None:
        return None
    return np.asarray(dataset[()], dtype=np.float64).reshape(-1) if dataset.size else None


def _root_time_dataset(file: Any) -> Any:
    """The root dataset ``time`` (any case) when it is numeric and a scalar or one axis, else ``None``."""
    # h5py (optional): loaded only when an HDF5 file is read
    import h5py  # type: ignore[import-untyped]

    for key in file:
        node = file.get(key)
        if key.lower() == "time" and isinstance(node, h5py.Dataset) and node.ndim <= 1 and node.dtype.kind in "iuf":
            return node
    return None


def _axis_names(dataset: Any, root_times: np.ndarray | None) -> list[str | None]:
    """Each axis's name: its dimension label, else the last segment of its first dimension scale. Axis 0
    of a 4-D dataset is named ``time`` when its own ``time`` attribute or the file's root ``time`` holds
    one value per index along it (more than one): what tells ``(t, Z, Y, X)`` from ``(Z, Y, X, c)``."""
    names: list[str | None] = []
    for axis in range(dataset.ndim):
        dim = dataset.dims[axis]
        name = dim.label or None
        if name is None and len(dim):
            name = dim[0].name.rsplit("/", 1)[-1]
        names.append(name)
    if dataset.ndim == 4 and names[0] is None and dataset.shape[0] > 1:
        own = time_values(dataset)
        if any(times is not None and times.size == dataset.shape[0] for times in (own, root_times)):
            names[0] = "time"
    return names


def _axis_times(dataset: Any, layout: _arrays.ArrayLayout) -> np.ndarray | None:
    """Times along a dataset's time axis: its dimension scale, or its attribute ``time`` of one value a step."""
    if layout.time_axis is None:
        return None
    dim = dataset.dims[layout.time_axis]
    if len(dim):
        scale = dim[0]
        if scale.ndim == 1 and scale.shape[0] == layout.steps and scale.dtype.kind in "iuf":
            return np.asarray(scale[()], dtype=np.float64)
    values = time_values(dataset)
    return values if values is not None and values.size == layout.steps else None


@dataclass(frozen=True)
class _DatasetRef:
    """One frame of one field: a dataset, what it holds and where."""

    path: Path
    name: str
    shape: FrameShape
    dtype: np.dtype
    chunks: tuple[int, ...] | None
    time: float | None
    layout: _arrays.ArrayLayout
    step: int | None  # the index along the dataset's time axis, None without one


@dataclass(frozen=True)
class _PatternField:
    info: FieldInfo
    pattern: str
    frames: list[_DatasetRef]


class Hdf5Source:
    """HDF5 datasets picked by patterns, one per frame and field; see :func:`open_hdf5`."""

    def __init__(self, path: Path, fields: list[_PatternField]) -> None:
        self.path = path
        self._fields = fields
        self.fields = [field.info for field in fields]
        self.frame_count = len(fields[0].frames)
        self.total_bytes = sum(ref.shape.elements * ref.shape.components * field.info.dtype.itemsize
                               for field in fields for ref in field.frames)
        self.attributes: dict[str, AttributeValue] = {
            "source_format": "hdf5", "source_path": os.fspath(path),
            "hdf5_patterns": ";".join(f"{field.info.name}={field.pattern}" for field in fields),
        }
        self._bbox: BBox | None = None
        grid = _shared_grid(fields)
        if grid is not None:
            grid_attributes, self._bbox = _arrays.grid_attributes(grid)
            self.attributes.update(grid_attributes)

    def frames(self) -> Iterator[SourceFrame]:
        files = OpenFiles()
        try:
            for index in range(self.frame_count):
                time = self._fields[0].frames[index].time
                yield SourceFrame(time=float(index) if time is None else time, bbox=self._bbox,
                                  pieces=self._pieces(files, index))
        finally:
            files.close()

    def _pieces(self, files: OpenFiles, index: int) -> Iterator[Piece]:
        for field in self._fields:
            ref = field.frames[index]
            dataset = files.get(ref.path)[ref.name]
            yield from array_pieces(field.info.name, ref.shape, field.info.dtype,
                                    dataset_reader(ref.path, dataset, ref.layout, ref.step), ref.layout.frame_chunks(ref.chunks))


def _shared_grid(fields: list[_PatternField]) -> tuple[int, int, int] | None:
    """The ``(Z, Y, X)`` grid the grid fields share (a container has one), ``None`` without grids."""
    grids = [(field.frames[0], field.frames[0].shape.grid) for field in fields if field.frames[0].shape.grid]
    for ref, grid in grids[1:]:
        if grid != grids[0][1]:
            first = grids[0][0]
            raise bad_dataset(errors.CorruptIndexError, ref.path, f"dataset {ref.name}",
                              f"grid shape {grids[0][1]} shared by every grid field (as {first.name})", str(grid))
    return grids[0][1] if grids else None


def _parse_pattern(text: str) -> tuple[str | None, str]:
    """``NAME=PATTERN`` -> (NAME, PATTERN); a bare pattern (or one whose '=' comes after a '/' or a
    wildcard, so part of a dataset name) has no name."""
    name, equals, pattern = text.partition("=")
    if equals and name and not re.search(r"[/*?\[]", name):
        return name, pattern
    return None, text


def _matches(pattern: str, names: Sequence[str]) -> list[str]:
    """The dataset paths ``pattern`` matches segment by segment, in natural order."""
    wanted = pattern.strip("/").split("/")
    found = [name for name in names if len(parts := name.strip("/").split("/")) == len(wanted)
             and all(fnmatch.fnmatchcase(part, want) for part, want in zip(parts, wanted))]
    return sorted(found, key=natural_key)


def _dataset_names(file: Any) -> list[str]:
    # h5py (optional): loaded only when an HDF5 file is read
    import h5py  # type: ignore[import-untyped]

    names: list[str] = []
    file.visititems(lambda name, node: names.append("/" + name) if isinstance(node, h5py.Dataset) else None)
    return names


def _dataset_refs(path: Path, dataset: Any, layout: _arrays.ArrayLayout) -> list[_DatasetRef]:
    """The frames a dataset gives (one, or one per step along its time axis) and their times: along a
    time axis its scale's or ``time`` attribute's values; else a scalar ``time`` of the dataset or of its
    group (the root's is the file's, see :func:`_root_time`)."""
    label = f"dataset {dataset.name}"
    dtype = np.dtype(dataset.dtype)
    stored_dtype(dtype, path, label)
    if layout.time_axis is not None:
        times = _axis_times(dataset, layout)
        return [_DatasetRef(path, dataset.name, layout.frame, dtype, dataset.chunks,
                            None if times is None else float(times[step]), layout, step)
                for step in range(layout.steps)]
    time = time_attribute(dataset)
    if time is None and dataset.parent.name != "/":
        time = time_attribute(dataset.parent)
    return [_DatasetRef(path, dataset.name, layout.frame, dtype, dataset.chunks, time, layout, None)]


def _with_root_times(refs: list[_DatasetRef], times: np.ndarray | None) -> list[_DatasetRef]:
    """A file's frames of one field, those without a time of their own given the file's: one value for
    a file of one frame, or one per frame."""
    if times is None or times.size != len(refs):
        return refs
    return [ref if ref.time is not None else replace(ref, time=float(time)) for ref, time in zip(refs, times)]


def _default_patterns(path: Path, file: Any, names: list[str]) -> list[tuple[str | None, str]]:
    """What to convert without ``--dataset``: the file's one dataset (its root ``time`` and dimension
    scales aside), or the
    one step pattern its datasets fall into (``/step0/rho``, ``/step1/rho``: ``/step*/rho``), said once."""
    time = _root_time_dataset(file)
    data = [name for name in names if (time is None or name != time.name) and not file[name].is_scale]
    if len(data) == 1:
        return [(None, data[0])]
    groups: dict[str, list[str]] = {}
    for name in data:
        groups.setdefault(re.sub(r"\d+", "*", name), []).append(name)
    steps = {pattern: members for pattern, members in groups.items() if "*" in pattern and len(members) > 1}
    if len(steps) == 1:
        pattern, members = next(iter(steps.items()))
        others = [name for name in data if name not in members]
        left = f"; left out: {show_names(others)}" if others else ""
        warnings.warn(ConversionNote(f"{path}: converting the {len(members)} datasets {pattern} as frames "
                                     f"(--dataset names others{left})"), stacklevel=4)
        return [(None, pattern)]
    if len(steps) > 1:
        choices = " ".join(f"--dataset '{pattern}'" for pattern in sorted(steps))
        raise errors.UsageError(f"{path}: the datasets fall into {len(steps)} step patterns; name the fields to "
                                f"convert: {choices} (one field each), or some of them")
    raise errors.UsageError(f"{path}: name the datasets to convert with --dataset PATTERN "
                            f"(datasets: {show_names(names)})")


def _check_frames(field: _PatternField) -> None:
    """A field's frames agree on element type and components; a grid keeps its shape."""
    first = field.frames[0]
    for ref in field.frames[1:]:
        label = f"dataset {ref.name}"
        dtype = stored_dtype(ref.dtype, ref.path, label)
        if dtype != field.info.dtype:
            raise bad_dataset(errors.CorruptIndexError, ref.path, label,
                              f"dtype {field.info.dtype} as {first.name} has", f"dtype {dtype}")
        if ref.shape.grid != first.shape.grid or ref.shape.components != first.shape.components:
            raise bad_dataset(errors.CorruptIndexError, ref.path, label, f"the shape of {first.name}, "
                              f"{_shape_text(first.shape)}", _shape_text(ref.shape))


def _shape_text(shape: FrameShape) -> str:
    if shape.grid is not None:
        return f"grid {shape.grid}" + (f" x {shape.components}" if shape.components > 1 else "")
    return f"elements of {shape.components} component{'s' if shape.components > 1 else ''}"


def open_hdf5(paths: Sequence[os.PathLike | str], *, dataset: str | Sequence[str] | None = None,
              time_axis: int | None = None, components: int | None = None) -> Hdf5Source | H5PartSource:
    """Open HDF5 files and check the datasets the patterns ``dataset`` pick (see the module docstring).

    Without patterns, an H5Part file (root groups ``Step#N``) is read by :func:`open_h5part`, a file
    of one dataset (a root ``time`` aside) converts that dataset and a file whose datasets fall into one
    step pattern converts them (said once by a :class:`ConversionNote` warning). Each dataset's time axis
    follows ``_arrays.array_layout`` (``time_axis``, ``components``, dimension labels and scales). Raises ``TruncatedFileError`` (a file shorter than its
    superblock says), ``BadMagicError`` (not HDF5), ``CorruptIndexError`` (frames that disagree in type
    or shape, patterns that match different counts), ``BadDataError`` (a pattern that matches nothing, a
    type or shape a container cannot hold) and ``UsageError`` (no pattern where one is needed).
    """
    files = [Path(path) for path in paths]
    if not files:
        raise errors.UsageError("no HDF5 files given")
    patterns = [dataset] if isinstance(dataset, str) else list(dataset or [])
    parsed = [_parse_pattern(text) for text in patterns]
    matched: list[list[_DatasetRef]] = [[] for _ in parsed]
    for path in files:
        with open_hdf5_file(path) as file:
            names = _dataset_names(file)
            if not parsed:  # the first file tells what to convert
                if is_h5part_file(file):
                    return open_h5part(files)
                parsed = _default_patterns(path, file, names)
                matched = [[] for _ in parsed]
            hits_of = []
            for _, pattern in parsed:
                hits = _matches(pattern, names)
                if not hits:
                    raise bad_dataset(errors.BadDataError, path, f"dataset {pattern}", "datasets matching it",
                                      f"none (datasets: {show_names(names)})")
                hits_of.append(hits)
            every = sorted({hit for hits in hits_of for hit in hits})
            times = _root_time(file)
            layouts = _arrays.resolve_layouts({f"dataset {hit}": file[hit].shape for hit in every}, path,
                                              time_axis=time_axis, components=components,
                                              names={f"dataset {hit}": _axis_names(file[hit], times) for hit in every},
                                              say=path == files[0])
            counts = []
            for (_, pattern), refs, hits in zip(parsed, matched, hits_of):
                found = [ref for hit in hits for ref in _dataset_refs(path, file[hit], layouts[f"dataset {hit}"])]
                refs.extend(_with_root_times(found, times))
                counts.append((pattern, len(found)))
            for pattern, count in counts[1:]:
                if count != counts[0][1]:
                    raise bad_dataset(errors.CorruptIndexError, path, f"dataset {pattern}",
                                      f"{counts[0][1]} frames as {counts[0][0]} gives", f"{count}")
    fields: list[_PatternField] = []
    for (name, pattern), refs in zip(parsed, matched):
        first = refs[0]
        field_name = name or _arrays.frame_stem(first.name.rsplit("/", 1)[-1])
        if any(field.info.name == field_name for field in fields):
            raise errors.UsageError(f"{first.path}: two patterns make field {field_name!r}; name them NAME=PATTERN")
        info = FieldInfo(field_name, stored_dtype(first.dtype, first.path, f"dataset {first.name}"),
                         first.shape.components)
        field = _PatternField(info, pattern, refs)
        _check_frames(field)
        fields.append(field)
    return Hdf5Source(files[0], fields)
