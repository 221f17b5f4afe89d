"""Point sets: any file's points as the sphere renderer's records.

A file converted from H5Part, a ``.vtp``, a ``.npy`` or HDF5 point cloud holds its points as fields, not as
the renderer's ``particles`` record (x, y, z, radius, r, g, b, a in float32). :class:`PointSet` says which
fields make a point and packs a frame of them into those records on the host:

- **positions**: ``positions=NAME``, else a field of 3 components named ``position``, ``positions``,
  ``points``, ``xyz`` or ``coordinates``, else fields ``x``, ``y`` and ``z`` of one component; any integer
  or float type (cast to float32). Two candidates, or none, is a UsageError naming the fields to choose from.
- **radius**: ``radius=FIELD`` (one component) or ``radius=VALUE``; else a field named ``radius`` or
  ``radii``; else :func:`default_radius` of the first frame drawn (from its box and its point count).
- **colour**: ``colour=FIELD`` (3 or 4 components: RGB or RGBA; floats in 0..1, integers over their
  type's range) or ``colour=(R, G, B[, A])`` in 0..1; else a field named ``colour``, ``color``, ``colours``,
  ``colors``, ``rgb`` or ``rgba`` of 3 or 4 components; else light grey.
- **colour by** any field (``colour_by="temperature"``, a component ``"velocity:1"``, a length
  ``"velocity:magnitude"``) through a colour map (``colour_map``, matplotlib's) over ``colour_range``
  (default: the field's range over every frame, from the file's index). The renderer maps the values
  (:data:`COLOUR_FROM_SCALARS`, the viewer's look), so a point's colour is the same on the CPU and the GPU.

A file with the ``particles`` record is a point set too (its columns are the positions, radius and
colour), which is how ``colour_by`` reaches it; drawn as it is, it streams through the engine instead
(:class:`headrace.workloads.particles.StreamingRenderer`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from headrace.errors import UnknownNameError, UsageError
from headrace.imaging import chunk_bounds, colour_table, value_range

__all__ = ["POSITION_NAMES", "position_names", "RECORD_FIELD", "COLOUR_FROM_SCALARS", "ColourBy", "PointSet", "is_particle_record",
           "find_positions", "default_radius", "colour_choices", "unique"]

RECORD_FIELD = "particles"  # the renderer's own record: 8 float32 (x, y, z, radius, r, g, b, a)
POSITION_NAMES = ("position", "positions", "points", "xyz", "coordinates")
RADIUS_NAMES = ("radius", "radii")
COLOUR_NAMES = ("colour", "color", "colours", "colors", "rgb", "rgba")
DEFAULT_COLOUR = (0.8, 0.8, 0.8, 1.0)  # light grey: a headlight's shading shows the spheres' shapes
COLOUR_FROM_SCALARS = 8  # the renderer's look: colour from a per-point array through a table (GlyphStyle)
MAGNITUDE = "magnitude"
# The default radius: this fraction of the points' mean spacing, at most this fraction of the box's diagonal.
SPACING_FRACTION, MOST_DIAGONAL_FRACTION = 0.3, 0.05


def unique(names: Sequence[str]) -> list[str]:
    """The names in order, each once."""
    return list(dict.fromkeys(names))


def is_particle_record(ds: Any, field: str = RECORD_FIELD) -> bool:
    """Whether ``field`` of the file is the renderer's record: 8 float32 a particle."""
    found = {f.name: f for f in ds.fields}.get(field)
    return found is not None and found.dtype == "float32" and found.components == 8


def _numeric(field: Any) -> bool:
    return np.dtype(field.dtype).kind in "iuf"


def _listed(fields: Sequence[Any]) -> str:
    return ", ".join(f"{f.name} ({f.dtype} x{f.components})" for f in fields) or "none"


def find_positions(ds: Any, positions: str | None = None) -> list[str]:
    """The fields that hold the points' positions: one field of 3 components, or fields x, y, z. UsageError
    naming the candidates when none or several fit, UnknownNameError for a name the file does not have."""
    fields = {f.name: f for f in ds.fields}
    if positions is not None:
        found = fields.get(positions)
        if found is None:
            raise UnknownNameError(f"{ds.path}: no field {positions!r} for the positions (fields: {_listed(ds.fields)})")
        if found.components != 3 or not _numeric(found):
            raise UsageError(f"{ds.path}: field {positions!r} is {found.dtype} x{found.components}; positions are a "
                             "field of 3 numbers a point")
        return [positions]
    named = [f.name for f in ds.fields if f.name.lower() in POSITION_NAMES and f.components == 3 and _numeric(f)]
    axes = [name for name in ("x", "y", "z") if name in fields and fields[name].components == 1 and _numeric(fields[name])]
    candidates: list[list[str]] = [[name] for name in named] + ([axes] if len(axes) == 3 else [])
    if is_particle_record(ds) and not candidates:
        return [RECORD_FIELD]
    if len(candidates) == 1:
        return candidates[0]
    choices = [", ".join(c) if len(c) > 1 else c[0] for c in candidates]
    if candidates:
        raise UsageError(f"{ds.path}: the positions could be {' or '.join(repr(c) for c in choices)}: name one "
                         "(--positions NAME)")
    triples = [f.name for f in ds.fields if f.components == 3 and _numeric(f)]
    hint = f"; fields of 3 components: {', '.join(triples)} (--positions NAME picks one)" if triples else ""
    raise UsageError(f"{ds.path}: no positions (a field of 3 components named {position_names()}, or fields x, y and "
                     f"z); its fields: {_listed(ds.fields)}{hint}")


def position_names() -> str:
    """The names a positions field is known by, as a sentence lists them."""
    return f"{', '.join(POSITION_NAMES[:-1])} or {POSITION_NAMES[-1]}"



@dataclass(frozen=True)
class ColourBy:
    """What a point is coloured by: a field of one component, one component of a field, or the length of
    a field's vectors (``component`` None and ``magnitude`` True)."""

    field: str
    component: int | None = None
    magnitude: bool = False
    components: int = 1  # the field's

    @classmethod
    def parse(cls, ds: Any, spec: str) -> ColourBy:
        """``FIELD``, ``FIELD:K`` or ``FIELD:magnitude``; UsageError naming the choices."""
        name, colon, which = spec.partition(":")
        fields = {f.name: f for f in ds.fields}
        found = fields.get(name)
        if found is None or not _numeric(found):
            raise UnknownNameError(f"{ds.path}: cannot colour by {spec!r} (choices: {', '.join(colour_choices(ds))})")
        if not colon:
            if found.components != 1:
                raise UsageError(f"{ds.path}: field {name!r} has {found.components} components: colour by "
                                 f"{name}:0 to {name}:{found.components - 1} or {name}:{MAGNITUDE}")
            return cls(name, 0)
        if which == MAGNITUDE:
            return cls(name, None, True, found.components)
        if not which.isdigit() or int(which) >= found.components:
            raise UsageError(f"{ds.path}: cannot colour by {spec!r}: field {name!r} has components 0 to "
                             f"{found.components - 1} (or {name}:{MAGNITUDE})")
        return cls(name, int(which), False, found.components)

    def __str__(self) -> str:
        if self.magnitude:
            return f"{self.field}:{MAGNITUDE}"
        return self.field if self.components == 1 else f"{self.field}:{self.component}"

    def values(self, array: np.ndarray) -> np.ndarray:
        """One float32 a point from the field's values ((N, components), or N for one component)."""
        values = array.reshape(-1, self.components)
        if self.magnitude:
            return np.sqrt(np.sum(np.square(values, dtype=np.float64), axis=1)).astype(np.float32)
        return np.ascontiguousarray(values[:, self.component or 0], dtype=np.float32)

    def value_range(self, ds: Any) -> tuple[float, float]:
        """The values' range over every frame from the index: a component's, or for a length the bounds each
        chunk's component ranges give (the shortest and longest vectors they allow)."""
        if not self.magnitude:
            return value_range(ds, self.field, self.component or 0)
        lo, hi = chunk_bounds(ds, self.field, range(ds.field(self.field).components))
        if not len(lo):
            return 0.0, 1.0
        # A chunk a row: each chunk's box of vectors bounds its lengths.
        far = np.maximum(np.abs(lo), np.abs(hi))
        near = np.where((lo <= 0) & (hi >= 0), 0.0, np.minimum(np.abs(lo), np.abs(hi)))
        least, most = float(np.sqrt(np.sum(near ** 2, axis=1)).min()), float(np.sqrt(np.sum(far ** 2, axis=1)).max())
        return (least, most) if most > least else (least, least + 1.0)


def colour_choices(ds: Any) -> list[str]:
    """What a point of the file can be coloured by: each numeric field of one component, each component of
    the others and their lengths (the particles record's own columns are x, y, z and radius of it)."""
    choices: list[str] = []
    for f in ds.fields:
        if not _numeric(f):
            continue
        if f.components == 1:
            choices.append(f.name)
        else:
            choices.extend([*(f"{f.name}:{k}" for k in range(f.components)), f"{f.name}:{MAGNITUDE}"])
    return choices


def default_radius(box: tuple[Sequence[float], Sequence[float]], count: int) -> float:
    """A radius for ``count`` points in ``box``: SPACING_FRACTION of their mean spacing were they spread
    evenly over the box's extent (in as many dimensions as it has), at most MOST_DIAGONAL_FRACTION of its
    diagonal; 0.05 for a box of no extent (one point, or all at one place)."""
    extent = np.asarray(box[1], dtype=np.float64) - np.asarray(box[0], dtype=np.float64)
    diagonal = float(np.linalg.norm(extent)) if np.isfinite(extent).all() else 0.0
    if diagonal <= 0.0:
        return 0.05
    spread = extent[extent > 1e-9 * diagonal]
    spacing = float(np.prod(spread) / max(count, 1)) ** (1.0 / len(spread))
    return min(SPACING_FRACTION * spacing, MOST_DIAGONAL_FRACTION * diagonal)


class PointSet:
    """Which fields of a file make its points, and how a frame of them becomes the renderer's records;
    see the module docstring. ``camera_frame``: the frame whose box and count give the default radius."""

    def __init__(self, ds: Any, *, positions: str | None = None, radius: str | float | None = None,
                 colour: str | Sequence[float] | None = None, colour_by: str | None = None,
                 colour_map: str = "viridis", colour_range: tuple[float, float] | None = None,
                 camera_frame: int = 0) -> None:
        self.dataset = ds
        self.positions = find_positions(ds, positions)
        self.record = self.positions == [RECORD_FIELD]
        fields = {f.name: f for f in ds.fields}
        self.radius_field, self.radius_value, self.radius_said = self._radius(ds, fields, radius)
        self.colour_field, self.colour_value = self._colour(ds, fields, colour)
        self.colour_by = ColourBy.parse(ds, colour_by) if colour_by is not None else None
        self.colour_map = colour_map
        self.colour_range: tuple[float, float] | None = None
        self.table: np.ndarray | None = None
        if self.colour_by is not None:
            self.table = colour_table(colour_map)
            given = (float(colour_range[0]), float(colour_range[1])) if colour_range is not None else None
            self.colour_range = given or self.colour_by.value_range(ds)
        self.fields: list[str] = unique([*self.positions, *([self.radius_field] if self.radius_field else []),
                                         *([self.colour_field] if self.colour_field else []),
                                         *([self.colour_by.field] if self.colour_by else [])])
        # The first frame drawn frames the camera and, with no radius given, sizes the points; its positions
        # are read only when the file records no box for it.
        recorded = np.asarray(ds.frames[camera_frame].bbox, dtype=np.float64)
        points = None if np.isfinite(recorded).all() else self._positions_of(self.read(camera_frame, self.positions))
        self.home_box = _box_of(points, ds, camera_frame)
        if not self.record and self.radius_field is None and self.radius_value is None:
            self.radius_value = default_radius(self.home_box, ds.element_count(camera_frame, self.positions[0]))

    def _radius(self, ds: Any, fields: dict[str, Any], radius: str | float | None) -> tuple[str | None, float | None, str]:
        if isinstance(radius, (int, float)) and not isinstance(radius, bool):
            if not (math.isfinite(radius) and radius > 0):
                raise UsageError(f"radius {radius!r}: expected a number above 0")
            return None, float(radius), "given"
        if isinstance(radius, str):
            try:
                value = float(radius)
            except ValueError:
                value = None
            if value is not None:
                return self._radius(ds, fields, value)
            found = fields.get(radius)
            if found is None:
                singles = [f.name for f in ds.fields if f.components == 1 and _numeric(f)]
                raise UnknownNameError(f"{ds.path}: no field {radius!r} for the radius (a number, or a field of one "
                                       f"component: {', '.join(singles) or 'none'})")
            if found.components != 1 or not _numeric(found):
                raise UsageError(f"{ds.path}: field {radius!r} is {found.dtype} x{found.components}; a radius field "
                                 "holds one number a point")
            return radius, None, f"field {radius!r}"
        if self.record:
            return None, None, "the record's"
        named = [f.name for f in ds.fields if f.name.lower() in RADIUS_NAMES and f.components == 1 and _numeric(f)]
        if len(named) == 1:
            return named[0], None, f"field {named[0]!r}"
        return None, None, "from the first frame's box and point count; --radius sets it"

    def _colour(self, ds: Any, fields: dict[str, Any], colour: str | Sequence[float] | None
                ) -> tuple[str | None, tuple[float, ...] | None]:
        if colour is not None and not isinstance(colour, str):
            values = tuple(float(c) for c in colour)
            if len(values) not in (3, 4) or not all(0.0 <= c <= 1.0 for c in values):
                raise UsageError(f"colour {colour!r}: expected R, G, B or R, G, B, A in 0..1")
            return None, values + (1.0,) * (4 - len(values))
        if isinstance(colour, str):
            found = fields.get(colour)
            if found is None:
                triples = [f.name for f in ds.fields if f.components in (3, 4) and _numeric(f)]
                raise UnknownNameError(f"{ds.path}: no field {colour!r} for the colour (fields of 3 or 4 components: "
                                       f"{', '.join(triples) or 'none'})")
            if found.components not in (3, 4) or not _numeric(found):
                raise UsageError(f"{ds.path}: field {colour!r} is {found.dtype} x{found.components}; a colour field "
                                 "holds RGB or RGBA (3 or 4 numbers a point)")
            return colour, None
        if self.record:
            return None, None
        named = [f.name for f in ds.fields if f.name.lower() in COLOUR_NAMES and f.components in (3, 4) and _numeric(f)]
        if len(named) == 1:
            return named[0], None
        return None, DEFAULT_COLOUR

    def read(self, frame: int, fields: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """The point set's fields (or ``fields`` of them) of a frame, read on the host
        (:meth:`headrace.Dataset.read`)."""
        return {name: self.dataset.read(frame, name) for name in (self.fields if fields is None else fields)}

    def _positions_of(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        if self.record:
            return arrays[RECORD_FIELD].reshape(-1, 8)[:, :3]
        if len(self.positions) == 1:
            return arrays[self.positions[0]].reshape(-1, 3)
        return np.stack([arrays[name].reshape(-1) for name in self.positions], axis=1)

    def pack(self, arrays: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray | None]:
        """(N, 8) float32 records and, when colouring by a field, N float32 values for the renderer's look."""
        if self.record:
            records = np.array(arrays[RECORD_FIELD].reshape(-1, 8), dtype=np.float32, copy=True)
        else:
            points = self._positions_of(arrays)
            records = np.empty((len(points), 8), dtype=np.float32)
            records[:, :3] = points
        if self.radius_field is not None:
            records[:, 3] = arrays[self.radius_field].reshape(-1)
        elif self.radius_value is not None:
            records[:, 3] = self.radius_value
        if self.colour_field is not None:
            colours = arrays[self.colour_field].reshape(len(records), self.dataset.field(self.colour_field).components)
            if colours.dtype.kind in "iu":  # integers span their type's range: 255 is full for uint8
                colours = colours / np.float64(np.iinfo(colours.dtype).max)
            records[:, 4:4 + colours.shape[1]] = colours
            if colours.shape[1] == 3:
                records[:, 7] = 1.0
        elif self.colour_value is not None:
            records[:, 4:8] = self.colour_value
        scalars = self.colour_by.values(arrays[self.colour_by.field]) if self.colour_by is not None else None
        return records, scalars

    def look(self) -> dict[str, Any]:
        """Keyword arguments of the renderer's ``set_look``: the stored colour, or the colour-by table."""
        if self.colour_by is None or self.table is None or self.colour_range is None:
            return {}
        lo, hi = self.colour_range
        return {"colour_by": COLOUR_FROM_SCALARS, "table": self.table.reshape(-1).tolist(), "lo": lo, "hi": hi}

    def describe(self) -> str:
        """One line: the fields that make the points and what was chosen for them."""
        ds = self.dataset
        where = ", ".join(self.positions)
        dtype = ds.field(self.positions[0]).dtype
        parts = [f"positions {where} ({dtype})"]
        if self.radius_value is not None and self.radius_field is None:
            parts.append(f"radius {self.radius_value:.6g} ({self.radius_said})")
        else:
            parts.append(f"radius {self.radius_said}")
        if self.colour_by is not None and self.colour_range is not None:
            lo, hi = self.colour_range
            parts.append(f"colour by {self.colour_by} over {lo:.6g} to {hi:.6g} ({self.colour_map})")
        elif self.colour_field is not None:
            parts.append(f"colour from field {self.colour_field!r}")
        elif self.colour_value is not None:
            parts.append("colour " + ",".join(f"{c:g}" for c in self.colour_value))
        else:
            parts.append("colour the record's")
        return "; ".join(parts)


def _box_of(points: np.ndarray | None, ds: Any, frame: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The box a camera frames: the frame's recorded box, else that of its finite ``points``, else the unit box."""
    recorded = np.asarray(ds.frames[frame].bbox, dtype=np.float64)
    if np.isfinite(recorded).all():
        return tuple(recorded[0]), tuple(recorded[1])
    finite = points[np.isfinite(points).all(axis=1)] if points is not None and len(points) else None
    if finite is not None and len(finite):
        return tuple(np.min(finite, axis=0).astype(np.float64)), tuple(np.max(finite, axis=0).astype(np.float64))
    return (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
