"""Headerless raw grids (``bonsai_256x256x256_uint8.raw``, the Open SciVis data sets' naming): values x
fastest, then y, then z, frames back to back; and how a ``.raw`` file is told from raw particles.

- **Dims and type**: ``dims`` ``(X, Y, Z)`` and ``dtype`` (a NumPy name: ``uint8``, ``float32``, ``<u2``,
  ``>f4``; little-endian unless it says otherwise), else from the file name ``NAME_XxYxZ_TYPE.raw`` (``TYPE``
  one of ``uint8`` ... ``uint64``, ``int8`` ... ``int64``, ``float32``, ``float64``); an option given wins over
  the name. ``components`` values per point (default 1), a point's values together.
- **Frames**: the file holds a whole number of frames of ``X * Y * Z * components`` values; one frame per
  such run, in order, time = the frame index. Several files are frames file after file.
- **Field**: ``field``, else the name's ``NAME`` (or the file's stem without a trailing frame number).
- **Grid**: ``grid_dims`` ``[X, Y, Z]``, origin 0, spacing 1, ``layout`` ``linear``; values are copied
  unchanged (byte-swapped to native when stored big-endian).

A ``.raw`` file given without ``--format`` (:func:`raw_kind`) is a grid when ``dims`` or ``dtype`` is given or
its name follows the convention; particles when ``particles_per_frame`` or ``frames`` is given, or when its
name says ``particle`` and its size is a whole number of particles; anything else is a ``UsageError`` that
names both choices, never 32-byte particles by default.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from headrace import errors
from headrace.convert import _arrays
from headrace.convert.source import AttributeValue, BBox, FieldInfo, Piece, SourceFrame, bad_data, open_error

__all__ = ["RawGridSource", "RawName", "open_raw_grid", "parse_raw_name", "raw_kind"]

# NAME_XxYxZ_TYPE.raw (2-D: NAME_XxY_TYPE.raw, Z = 1), the Open SciVis data sets' file names.
_NAME = re.compile(r"(?P<name>.+?)_(?P<x>\d+)x(?P<y>\d+)(?:x(?P<z>\d+))?_(?P<type>u?int(?:8|16|32|64)|float(?:32|64))"
                   r"\.raw", re.IGNORECASE)
# Options that make a .raw file a grid, and those that make it particles.
GRID_OPTIONS = ("dims", "dtype", "components")
PARTICLE_OPTIONS = ("particles_per_frame", "frames")
# Bytes of one raw particle (raw_particles.PARTICLE_BYTES: 8 float32).
_PARTICLE_BYTES = 32


@dataclass(frozen=True)
class RawName:
    """What a ``NAME_XxYxZ_TYPE.raw`` file name says."""

    name: str
    dims: tuple[int, int, int]
    dtype: np.dtype


def parse_raw_name(path: os.PathLike | str) -> RawName | None:
    """The name, dims and type a file name in the Open SciVis convention gives; ``None`` for another name."""
    match = _NAME.fullmatch(Path(path).name)
    if match is None:
        return None
    dims = (int(match["x"]), int(match["y"]), int(match["z"] or 1))
    return RawName(match["name"], dims, np.dtype(match["type"].lower()).newbyteorder("<"))


def raw_kind(path: Path, options: dict[str, object]) -> str:
    """``"grid"`` or ``"particles"`` for a ``.raw``/``.f32`` file given without ``--format`` (see the module
    docstring); ``UsageError`` naming both choices when nothing says which."""
    grid = [name for name in GRID_OPTIONS if options.get(name) is not None]
    particles = [name for name in PARTICLE_OPTIONS if options.get(name) is not None]
    if grid and particles:
        flags = ", ".join("--" + name.replace("_", "-") for name in grid + particles)
        raise errors.UsageError(f"{path}: {flags}: a raw file is a grid (--dims, --dtype, --components) or particles "
                                "(--particles-per-frame, --frames), not both")
    if grid:
        return "grid"
    if particles:
        return "particles"
    if parse_raw_name(path) is not None:
        return "grid"
    try:
        size = path.stat().st_size
    except OSError as error:
        raise open_error(path, error) from error
    if "particle" in path.name.lower() and size % _PARTICLE_BYTES == 0 and size:
        return "particles"
    raise errors.UsageError(f"{path}: a headerless raw file of {size} bytes: nothing says what it holds; a grid takes "
                            "--dims X Y Z --dtype T (or a name NAME_XxYxZ_TYPE.raw, e.g. bonsai_256x256x256_uint8.raw), "
                            "particles (8 float32 each) --format raw-particles")


class RawGridSource:
    """Opened and checked raw grid files; see :func:`open_raw_grid`."""

    def __init__(self, paths: list[Path], counts: list[int], name: str, dims: tuple[int, int, int],
                 dtype: np.dtype, components: int) -> None:
        self.path = paths[0]
        self._paths = paths
        self._counts = counts
        self._dtype = dtype
        self._shape = (dims[2], dims[1], dims[0], components)
        self.fields = [FieldInfo(name, _arrays.stored_dtype(dtype, paths[0], "--dtype"), components)]
        self.frame_count = sum(counts)
        self.total_bytes = self.frame_count * math.prod(self._shape) * dtype.itemsize
        attributes, self._bbox = _arrays.grid_attributes((dims[2], dims[1], dims[0]))
        self.attributes: dict[str, AttributeValue] = {"source_format": "raw", "source_path": os.fspath(paths[0]),
                                                      "raw_dtype": dtype.str, **attributes}

    def frames(self) -> Iterator[SourceFrame]:
        index = 0
        frame_bytes = math.prod(self._shape) * self._dtype.itemsize
        for path, count in zip(self._paths, self._counts):
            for step in range(count):
                # One frame mapped at a time, unmapped after it (its pages leave the process with it).
                values = np.memmap(path, dtype=self._dtype, mode="r", offset=step * frame_bytes, shape=self._shape)
                yield SourceFrame(time=float(index), bbox=self._bbox, pieces=self._pieces(values))
                index += 1
                del values

    def _pieces(self, values: np.ndarray) -> Iterator[Piece]:
        info = self.fields[0]
        frame = _arrays.FrameShape(self._shape[:3], info.components, self._shape[:3])  # type: ignore[arg-type]
        yield from _arrays.array_pieces(info.name, frame, info.dtype, lambda selection: values[selection])  # type: ignore[index]


def open_raw_grid(paths: Sequence[os.PathLike | str], *, dims: Sequence[int] | None = None, dtype: str | None = None,
                  components: int | None = None, field: str | None = None) -> RawGridSource:
    """Check raw grid files against their dims and type (options, else the name; see the module docstring).

    Raises ``UsageError`` (no dims or type given or named, a type a container cannot hold, bad options),
    ``EmptyFieldError`` (an empty file) and ``TruncatedFileError`` (a size that is not a whole number of
    frames, naming the file, the frame size and the bytes left over).
    """
    files = [Path(path) for path in paths]
    if not files:
        raise errors.UsageError("no raw files given")
    named = parse_raw_name(files[0])
    if dims is None and named is not None:
        dims = named.dims
    missing = [flag for flag, value in (("--dims X Y Z", dims), ("--dtype T (uint8, uint16, int16, float32, ...)",
                                                                 dtype or named)) if value is None]
    if missing:
        raise errors.UsageError(f"{files[0]}: a raw grid needs {' and '.join(missing)}, or a name NAME_XxYxZ_TYPE.raw "
                                "that gives them")
    element = _element_type(files[0], dtype, named)
    dims = tuple(int(d) for d in dims)  # type: ignore[union-attr]
    if len(dims) != 3 or min(dims) < 1:
        raise errors.UsageError(f"--dims {' '.join(map(str, dims))}: expected three sizes of at least 1 (X Y Z)")
    per_point = 1 if components is None else int(components)
    if per_point < 1:
        raise errors.UsageError(f"--components {per_point}: expected at least 1")
    frame_bytes = math.prod(dims) * per_point * element.itemsize
    counts = []
    for path in files:
        try:
            size = path.stat().st_size
        except OSError as error:
            raise open_error(path, error) from error
        grid = f"{dims[0]} x {dims[1]} x {dims[2]} {element.name}" + (f" x {per_point}" if per_point > 1 else "")
        if size == 0:
            raise bad_data(errors.EmptyFieldError, path, 0, f"frames of {frame_bytes} bytes ({grid})", "0 bytes")
        if size % frame_bytes:
            raise bad_data(errors.TruncatedFileError, path, size - size % frame_bytes,
                           f"a whole number of frames of {frame_bytes} bytes ({grid})",
                           f"{size} bytes ({size // frame_bytes} frames and {size % frame_bytes} bytes)")
        counts.append(size // frame_bytes)
    name = field or (named.name if named is not None else _arrays.frame_stem(files[0].stem))
    return RawGridSource(files, counts, name, (dims[0], dims[1], dims[2]), element, per_point)


def _element_type(path: Path, dtype: str | None, named: RawName | None) -> np.dtype:
    """``dtype`` (little-endian unless it says), else the name's; it must be a type a container holds."""
    if dtype is None:
        assert named is not None  # open_raw_grid asked for --dtype otherwise
        return named.dtype
    try:
        element = np.dtype(dtype)
    except TypeError:
        element = None
    if element is None or element.kind not in "iuf" or element.fields is not None:
        raise errors.UsageError(f"--dtype {dtype}: expected a number type (uint8, int16, uint16, float32, float64, "
                                "<u2, >f4, ...)")
    if element.byteorder == "=" and element.itemsize > 1:
        element = element.newbyteorder("<")
    _arrays.stored_dtype(element, path, "--dtype")  # refuses a type no container holds
    return element
