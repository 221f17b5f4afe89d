"""zarr stores through zarr-python 3 (format 3 stores, and format 2 stores, which it opens too).

- **An array** is one field, named after the store (its folder's name without ``.zarr``).
- **A group**: its arrays (not those of nested groups), each a field of its own name: ``variables`` if
  given, in that order, else every array of two or more axes (one-axis arrays are coordinates) in
  natural order of their names.
- **Time**: axis 0 of every array, or axis ``time_axis``; each index along it is a frame, and every array
  has as many. The rest of an array's shape, per frame, follows the npy reader: ``(n,)`` and ``(n, c)``
  are elements, ``(Z, Y, X)`` and ``(Z, Y, X, c)`` grids (``grid_dims`` ``[X, Y, Z]``, origin 0, spacing
  1), one grid for all. Frame time: the group's one-axis numeric array ``time`` holding a value per
  frame, else the frame index.
- Element types are kept in native byte order (float16 as float32, bool as uint8); others are refused.
- **Reading** goes chunk by chunk: a frame is read in slabs of about 32 MiB made of whole chunks along
  the slab's axis where they fit. A chunk spanning k frames along the time axis is decoded for each of
  them, so a store chunked one frame deep along time converts fastest. A chunk missing from the store
  reads as the array's fill value (zarr's rule); one that cannot be decoded stops the conversion.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from headrace.convert import _arrays
from headrace.convert._arrays import FrameShape, Selection, array_pieces, bad_dataset, frame_shape, stored_dtype
from headrace.convert.formats import ZARR_STORE_MARKERS, is_zarr_store
from headrace.convert.source import AttributeValue, BBox, FieldInfo, Piece, SourceFrame, bad_data, natural_key

__all__ = ["ZarrSource", "open_zarr"]


def _open_store(path: Path) -> Any:
    import zarr

    from headrace import errors

    if not is_zarr_store(path):
        raise bad_data(errors.BadMagicError, path, 0, f"a zarr store (a folder with {', '.join(ZARR_STORE_MARKERS)})",
                       "none of them")
    try:
        return zarr.open(store=os.fspath(path), mode="r")
    except (ValueError, KeyError, TypeError, OSError) as error:
        raise bad_data(errors.CorruptIndexError, path, 0, "zarr metadata zarr-python can read",
                       f"an error ({type(error).__name__}: {error})") from None


@dataclass(frozen=True)
class _ArrayPlan:
    """One array as a field: where time is and what a frame of it is."""

    info: FieldInfo
    array: Any
    label: str
    shape: FrameShape

    def pieces(self, path: Path, time_axis: int, index: int) -> Iterator[Piece]:
        chunks = self.array.chunks[:time_axis] + self.array.chunks[time_axis + 1:]
        yield from array_pieces(self.info.name, self.shape, self.info.dtype, self._reader(path, time_axis, index),
                                chunks[: len(self.shape.element_axes)])

    def _reader(self, path: Path, time_axis: int, index: int) -> Callable[[Selection], np.ndarray]:
        from headrace import errors

        rest = self.array.ndim - 1

        def read(selection: Selection) -> np.ndarray:
            full = list(selection) + [slice(None)] * (rest - len(selection))
            full.insert(time_axis, index)
            try:
                return np.asarray(self.array[tuple(full)])
            except Exception as error:  # a chunk its codecs cannot decode: each codec raises its own kind
                raise bad_dataset(errors.BadDataError, path, self.label, f"chunks of frame {index} zarr can decode",
                                  f"an error ({type(error).__name__}: {error})") from None

        return read


class ZarrSource:
    """A zarr array or group of arrays over time, opened and checked; see :func:`open_zarr`."""

    def __init__(self, path: Path, plans: list[_ArrayPlan], time_axis: int, frame_count: int,
                 times: list[float] | None, zarr_format: int) -> None:
        self.path = path
        self._plans = plans
        self._time_axis = time_axis
        self._times = times
        self.fields = [plan.info for plan in plans]
        self.frame_count = frame_count
        self.total_bytes = frame_count * sum(plan.shape.elements * plan.shape.components * plan.info.dtype.itemsize
                                             for plan in plans)
        self.attributes: dict[str, AttributeValue] = {"source_format": "zarr", "source_path": os.fspath(path),
                                                      "zarr_format": zarr_format, "zarr_time_axis": time_axis}
        self._bbox: BBox | None = None
        grid = _shared_grid(path, plans)
        if grid is not None:
            grid_attributes, self._bbox = _arrays.grid_attributes(grid)
            self.attributes.update(grid_attributes)

    def frames(self) -> Iterator[SourceFrame]:
        for index in range(self.frame_count):
            time = self._times[index] if self._times is not None else float(index)
            yield SourceFrame(time=time, bbox=self._bbox, pieces=self._pieces(index))

    def _pieces(self, index: int) -> Iterator[Piece]:
        for plan in self._plans:
            yield from plan.pieces(self.path, self._time_axis, index)


def _shared_grid(path: Path, plans: list[_ArrayPlan]) -> tuple[int, int, int] | None:
    """The ``(Z, Y, X)`` grid the grid arrays share (a container has one), ``None`` without grids."""
    from headrace import errors

    grids = [(plan, plan.shape.grid) for plan in plans if plan.shape.grid is not None]
    for plan, grid in grids[1:]:
        if grid != grids[0][1]:
            raise bad_dataset(errors.CorruptIndexError, path, plan.label, f"grid shape {grids[0][1]} shared by every "
                              f"grid field (as {grids[0][0].label})", str(grid))
    return grids[0][1] if grids else None


def _plan(path: Path, name: str, array: Any, time_axis: int) -> _ArrayPlan:
    from headrace import errors

    label = f"array {array.path or name}"
    if array.ndim <= time_axis:
        raise bad_dataset(errors.BadDataError, path, label, f"an axis {time_axis} for time", f"shape {array.shape}")
    dtype = stored_dtype(np.dtype(array.dtype), path, label)
    shape = frame_shape(array.shape[:time_axis] + array.shape[time_axis + 1:], path, label)
    return _ArrayPlan(FieldInfo(name, dtype, shape.components), array, label, shape)


def _frame_times(group: Any, frames: int, taken: Sequence[str]) -> list[float] | None:
    """The values of the group's one-axis numeric array ``time`` when it has one per frame."""
    import zarr

    time = dict(group.members()).get("time") if group is not None else None
    if not isinstance(time, zarr.Array) or "time" in taken or time.shape != (frames,) or time.dtype.kind not in "iuf":
        return None
    return [float(value) for value in np.asarray(time[:])]


def open_zarr(paths: Sequence[os.PathLike | str], *, variables: Sequence[str] | None = None,
              time_axis: int | None = None) -> ZarrSource:
    """Open one zarr store and check the arrays to convert (see the module docstring for the rules).

    Raises ``BadMagicError`` (not a zarr store), ``CorruptIndexError`` (unreadable metadata, arrays that
    disagree in frames or grid), ``BadDataError`` (a variable not in the group, a type or shape a
    container cannot hold, no array to convert), ``EmptyFieldError`` (no frames) and
    ``UsageError`` (several stores, arrays of different frame counts to choose from).
    """
    import zarr

    from headrace import errors

    if len(paths) != 1:
        raise errors.UsageError(f"format zarr converts one store at a time, got {len(paths)}")
    path = Path(paths[0])
    axis = 0 if time_axis is None else time_axis
    node = _open_store(path)
    group = None
    if isinstance(node, zarr.Array):
        if variables:
            raise errors.UsageError(f"{path}: --variables picks arrays of a group; this store is one array")
        name = path.name[: -len(".zarr")] if path.name.lower().endswith(".zarr") else path.name
        plans = [_plan(path, name or "data", node, axis)]
    else:
        group = node
        members = sorted(group.members(), key=lambda member: natural_key(member[0]))  # the store lists them unordered
        arrays = {str(name): member for name, member in members if isinstance(member, zarr.Array)}
        if variables:
            for name in variables:
                if name not in arrays:
                    raise bad_dataset(errors.BadDataError, path, f"array {name}", "an array of the group",
                                      f"none by that name (arrays: {', '.join(arrays) or 'none'})")
            chosen = list(variables)
        else:
            chosen = [name for name, array in arrays.items() if array.ndim >= 2]
            if not chosen:
                raise bad_data(errors.BadDataError, path, 0, "an array of two or more axes (time and more)",
                               f"arrays {', '.join(f'{n} {a.shape}' for n, a in arrays.items()) or 'none'}")
            counts = {name: arrays[name].shape[axis] for name in chosen if arrays[name].ndim > axis}
            if len(set(counts.values())) > 1:
                listed = ", ".join(f"{name} ({count})" for name, count in counts.items())
                raise errors.UsageError(f"{path}: the arrays hold different numbers of frames along axis {axis} "
                                        f"({listed}); pick some with --variables or set --time-axis")
        plans = [_plan(path, name, arrays[name], axis) for name in chosen]
    frame_count = plans[0].array.shape[axis]
    for plan in plans[1:]:
        if plan.array.shape[axis] != frame_count:
            raise bad_dataset(errors.CorruptIndexError, path, plan.label,
                              f"{frame_count} frames along axis {axis} as {plans[0].label} has",
                              f"{plan.array.shape[axis]}")
    if frame_count == 0:
        raise bad_dataset(errors.EmptyFieldError, path, plans[0].label, f"at least one frame along axis {axis}", "0")
    times = _frame_times(group, frame_count, [plan.info.name for plan in plans])
    return ZarrSource(path, plans, axis, frame_count, times, int(plans[0].array.metadata.zarr_format))
