"""zarr stores through zarr-python 3 (format 3 stores, and format 2 stores, which it opens too).

- **An array** is one field, named after the store (its folder's name without ``.zarr``).
- **A group**: its arrays (not those of nested groups), each a field of its own name: ``variables`` if
  given, in that order, else every array of two or more axes (one-axis arrays are coordinates) in
  natural order of their names.
- **Time**: axis ``time_axis`` if given; else the axis whose dimension name (format 3's
  ``dimension_names``, format 2's ``_ARRAY_DIMENSIONS`` as xarray writes it) is ``time`` or ``t``, none when
  every axis is named otherwise (one frame); else axis 0. Each index along it is a frame, and every array
  has as many. The rest of an array's shape, per frame, follows the npy reader: ``(n,)`` and ``(n, c)``
  are elements, ``(Z, Y, X)`` and ``(Z, Y, X, c)`` grids (``grid_dims`` ``[X, Y, Z]``, origin 0, spacing
  1), one grid for all. Frame time: the group's one-axis array ``time`` holding a value per frame (dates,
  CF ``units`` or ``datetime64``, as seconds since the first: ``_times``), else the frame index.
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

from headrace import errors
from headrace.convert import _arrays
from headrace.convert._arrays import FrameShape, Selection, array_pieces, bad_dataset, stored_dtype
from headrace.convert._times import date_clock
from headrace.convert.source import AttributeValue, BBox, FieldInfo, Piece, SourceFrame, bad_data, natural_key

__all__ = ["ZarrSource", "open_zarr", "ZARR_STORE_MARKERS", "is_zarr_store", "is_store_folder"]

# Root metadata of a zarr store (a folder that is one input): format 3, then format 2's group and array.
ZARR_STORE_MARKERS = ("zarr.json", ".zgroup", ".zarray")


def is_zarr_store(path: Path) -> bool:
    """Whether ``path`` is a folder holding a zarr store (one of its root metadata files)."""
    return path.is_dir() and any((path / marker).is_file() for marker in ZARR_STORE_MARKERS)


def is_store_folder(path: Path) -> bool:
    """A zarr store, or a ``.zarr`` folder meant as one (:func:`open_zarr` says what it lacks)."""
    return is_zarr_store(path) or (path.is_dir() and path.suffix.lower() == ".zarr")


def _open_store(path: Path) -> Any:
    # zarr (optional, slow to import): loaded only when a zarr store is read
    import zarr

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
    layout: _arrays.ArrayLayout

    @property
    def shape(self) -> FrameShape:
        return self.layout.frame

    def pieces(self, path: Path, index: int) -> Iterator[Piece]:
        yield from array_pieces(self.info.name, self.shape, self.info.dtype, self._reader(path, index),
                                self.layout.frame_chunks(self.array.chunks))

    def _reader(self, path: Path, index: int) -> Callable[[Selection], np.ndarray]:
        def read(selection: Selection) -> np.ndarray:
            full = self.layout.select(index, selection, self.array.ndim)
            try:
                return np.asarray(self.array[full])
            except Exception as error:  # a chunk its codecs cannot decode: each codec raises its own kind
                raise bad_dataset(errors.BadDataError, path, self.label, f"chunks of frame {index} zarr can decode",
                                  f"an error ({type(error).__name__}: {error})") from None

        return read


class ZarrSource:
    """A zarr array or group of arrays over time, opened and checked; see :func:`open_zarr`."""

    def __init__(self, path: Path, plans: list[_ArrayPlan], frame_count: int, times: list[float] | None,
                 zarr_format: int, time_attributes: dict[str, AttributeValue]) -> None:
        self.path = path
        self._plans = plans
        self._times = times
        self.fields = [plan.info for plan in plans]
        self.frame_count = frame_count
        self.total_bytes = frame_count * sum(plan.shape.elements * plan.shape.components * plan.info.dtype.itemsize
                                             for plan in plans)
        self.attributes: dict[str, AttributeValue] = {"source_format": "zarr", "source_path": os.fspath(path),
                                                      "zarr_format": zarr_format, **time_attributes}
        if plans[0].layout.time_axis is not None:
            self.attributes["zarr_time_axis"] = plans[0].layout.time_axis
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
            yield from plan.pieces(self.path, index)


def _shared_grid(path: Path, plans: list[_ArrayPlan]) -> tuple[int, int, int] | None:
    """The ``(Z, Y, X)`` grid the grid arrays share (a container has one), ``None`` without grids."""
    grids = [(plan, plan.shape.grid) for plan in plans if plan.shape.grid is not None]
    for plan, grid in grids[1:]:
        if grid != grids[0][1]:
            raise bad_dataset(errors.CorruptIndexError, path, plan.label, f"grid shape {grids[0][1]} shared by every "
                              f"grid field (as {grids[0][0].label})", str(grid))
    return grids[0][1] if grids else None


def _dimension_names(array: Any) -> list[str | None] | None:
    """The array's axis names: format 3's ``dimension_names``, format 2's ``_ARRAY_DIMENSIONS`` (xarray's)."""
    names = getattr(array.metadata, "dimension_names", None)
    if names is None:
        names = array.attrs.get("_ARRAY_DIMENSIONS")
    if not isinstance(names, (list, tuple)) or len(names) != array.ndim:
        return None
    return [str(name) if name else None for name in names]


def _layout(path: Path, label: str, array: Any, time_axis: int | None,
            components: int | None) -> _arrays.ArrayLayout:
    """Time on axis ``time_axis``; else on the axis named ``time``/``t``, or none when every axis is named
    otherwise; else on axis 0 (zarr's rule here)."""
    names = _dimension_names(array)
    if time_axis is None and names is not None and (any(_arrays.is_time_name(n) for n in names) or all(names)):
        return _arrays.array_layout(array.shape, path, label, components=components, names=names)
    axis = 0 if time_axis is None else time_axis
    if array.ndim <= axis:
        raise bad_dataset(errors.BadDataError, path, label, f"an axis {axis} for time", f"shape {array.shape}")
    return _arrays.array_layout(array.shape, path, label, time_axis=axis, components=components)


def _plan(path: Path, name: str, array: Any, time_axis: int | None, components: int | None) -> _ArrayPlan:
    label = f"array {array.path or name}"
    dtype = stored_dtype(np.dtype(array.dtype), path, label)
    layout = _layout(path, label, array, time_axis, components)
    return _ArrayPlan(FieldInfo(name, dtype, layout.frame.components), array, label, layout)


def _frame_times(group: Any, frames: int, taken: Sequence[str]) -> tuple[list[float] | None, dict[str, AttributeValue]]:
    """The values of the group's one-axis array ``time`` when it has one per frame (dates, CF ``units``
    or ``datetime64``, as seconds since the first), and the attributes that say what they count."""
    # zarr (optional, slow to import): loaded only when a zarr store is read
    import zarr

    time = dict(group.members()).get("time") if group is not None else None
    if not isinstance(time, zarr.Array) or "time" in taken or time.shape != (frames,) or time.dtype.kind not in "iufM":
        return None, {}
    values = np.asarray(time[:])
    units = time.attrs.get("units")
    clock = date_clock(values, units, time.attrs.get("calendar"))
    attributes: dict[str, AttributeValue] = {"zarr_time_units": units} if isinstance(units, str) else {}
    if clock is None:
        return ([float(value) for value in values] if values.dtype.kind != "M" else None), attributes
    return clock.seconds(values), {**attributes, "time_units": clock.time_units}


def open_zarr(paths: os.PathLike | str | Sequence[os.PathLike | str], *, variables: Sequence[str] | None = None,
              time_axis: int | None = None, components: int | None = None) -> ZarrSource:
    """Open one zarr store (a path, or a sequence of one) and check the arrays to convert (see the module docstring for the rules).

    Raises ``BadMagicError`` (not a zarr store), ``CorruptIndexError`` (unreadable metadata, arrays that
    disagree in frames or grid), ``BadDataError`` (a variable not in the group, a type or shape a
    container cannot hold, no array to convert), ``EmptyFieldError`` (no frames) and
    ``UsageError`` (several stores, arrays of different frame counts to choose from).
    """
    # zarr (optional, slow to import): loaded only when a zarr store is read
    import zarr

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if len(paths) != 1:
        raise errors.UsageError(f"format zarr converts one store at a time, got {len(paths)}")
    path = Path(paths[0])
    node = _open_store(path)
    group = None
    if isinstance(node, zarr.Array):
        if variables:
            raise errors.UsageError(f"{path}: --variables picks arrays of a group; this store is one array")
        name = path.name[: -len(".zarr")] if path.name.lower().endswith(".zarr") else path.name
        plans = [_plan(path, name or "data", node, time_axis, components)]
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
        plans = [_plan(path, name, arrays[name], time_axis, components) for name in chosen]
        if not variables and len({plan.layout.steps for plan in plans}) > 1:
            same = len({plan.layout.time_axis for plan in plans}) == 1
            listed = ", ".join(f"{plan.info.name} ({plan.layout.steps}" + ("" if same else f", {_time_text(plan.layout)}")
                               + ")" for plan in plans)
            along = f" along axis {plans[0].layout.time_axis}" if same else ""
            raise errors.UsageError(f"{path}: the arrays hold different numbers of frames{along} ({listed}); pick some "
                                    "with --variables or set --time-axis")
    frame_count = plans[0].layout.steps
    for plan in plans[1:]:
        if plan.layout.steps != frame_count:
            same = plan.layout.time_axis == plans[0].layout.time_axis
            raise bad_dataset(errors.CorruptIndexError, path, plan.label,
                              f"{frame_count} frames " + (f"along axis {plan.layout.time_axis}" if same else
                                                          f"({_time_text(plans[0].layout)})")
                              + f" as {plans[0].label} has",
                              f"{plan.layout.steps}" + ("" if same else f" ({_time_text(plan.layout)})"))
    if frame_count == 0:
        raise bad_dataset(errors.EmptyFieldError, path, plans[0].label,
                          f"at least one frame along axis {plans[0].layout.time_axis}", "0")
    times, time_attributes = _frame_times(group, frame_count, [plan.info.name for plan in plans])
    return ZarrSource(path, plans, frame_count, times, int(plans[0].array.metadata.zarr_format), time_attributes)


def _time_text(layout: _arrays.ArrayLayout) -> str:
    return "no time axis" if layout.time_axis is None else f"time on axis {layout.time_axis}"
