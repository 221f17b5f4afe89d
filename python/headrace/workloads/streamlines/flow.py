"""A flow field's grid and velocity: which of a container's fields the tracer takes as the velocity
(:func:`velocity_of`), and the grid they lie on (:func:`grid_of`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

import headrace
from headrace import errors
from headrace.errors import UsageError

__all__ = ["VELOCITY_NAMES", "VELOCITY_COMPONENTS", "velocity_of", "grid_of"]


# Names a velocity goes by (case aside): of one field of 3 components, and of three scalar fields.
VELOCITY_NAMES = ("velocity", "vel", "u", "v", "uvw", "velocities", "vectors", "wind")
VELOCITY_COMPONENTS = (("u", "v", "w"), ("vx", "vy", "vz"), ("velx", "vely", "velz"), ("ux", "uy", "uz"),
                       ("velocity_x", "velocity_y", "velocity_z"), ("velocityx", "velocityy", "velocityz"))


def asked_fields(field: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """``--field``'s names: None, one name, or three (``"u,v,w"`` or a sequence)."""
    if field is None:
        return None
    names = tuple(n.strip() for n in (field.split(",") if isinstance(field, str) else field))
    if len(names) not in (1, 3) or not all(names):
        raise UsageError(f"field {','.join(names)!r}: a velocity is one field of 3 components (NAME) or three scalar fields "
                         "(U,V,W)")
    return names


def _described(ds: Any) -> str:
    return ", ".join(f"{f.name} ({f.dtype} x {f.components})" for f in ds.fields)


def velocity_of(source: Any, field: str | Sequence[str] | None = None, *, label: str | None = None) -> tuple[str, ...]:
    """The field(s) a trace takes as the velocity of ``source`` (a container): ``field`` when given (a
    name of 3 components, or three names of 1: ``"u,v,w"``), else its one field of 3 components, else the
    one of them named as a velocity is (:data:`VELOCITY_NAMES`), else three scalar fields named as a
    velocity's components are (:data:`VELOCITY_COMPONENTS`). Each is floating point (traced in float32).
    Raises ``UnknownNameError`` for a field it lacks and ``UsageError`` naming the candidates otherwise;
    messages name ``label`` (the user's file) or the container's path."""
    ds = source if hasattr(source, "fields") else headrace.open(path_of(source))
    label = label or os.fspath(ds.path)
    fields = {f.name: f for f in ds.fields}
    vectors = [f.name for f in ds.fields if f.components == 3]
    choices = (f"--field NAME for one of its fields of 3 components ({', '.join(vectors)})" if vectors else
               "--field U,V,W for three of its scalar fields")
    asked = asked_fields(field)
    if asked is None:
        named = [name for name in vectors if name.lower() in VELOCITY_NAMES]
        folded = {name.lower(): name for name, f in fields.items() if f.components == 1}
        triples = [tuple(folded[c] for c in triple) for triple in VELOCITY_COMPONENTS if all(c in folded for c in triple)]
        if len(vectors) == 1:
            asked = (vectors[0],)
        elif len(named) == 1:
            asked = (named[0],)
        elif not vectors and len(triples) == 1:
            asked = triples[0]
        else:
            which = "several could be" if vectors or triples else "none is of 3 components"
            raise UsageError(f"{label}: which field is the velocity? {which} (fields: {_described(ds)}): {choices}")
    for name in asked:
        if name not in fields:
            raise errors.UnknownNameError(f"{label}: no field {name!r} (fields: {_described(ds)})")
        info = fields[name]
        want = 3 if len(asked) == 1 else 1
        if info.components != want:
            kind = "a velocity has 3 components" if want == 3 else "each of three velocity fields has 1 component"
            raise UsageError(f"{label}: field {name!r} is {info.dtype} x {info.components}; {kind}: {choices}")
        if np.dtype(info.dtype).kind != "f":
            raise UsageError(f"{label}: field {name!r} is {info.dtype}; a velocity is floating point (float16, float32 "
                             "or float64)")
    return asked


def velocity_dtype(ds: Any, names: Sequence[str]) -> str:
    """The stored type of the velocity (one name, or the widest of three)."""
    return str(np.result_type(*(np.dtype(ds.field(name).dtype) for name in names)))


def velocity_grid(ds: Any, frame: int, names: Sequence[str], shape: tuple[int, int, int]) -> np.ndarray:
    """A frame's velocity as a (Z, Y, X, 3) float32 grid, from one field of 3 components or three of 1."""
    if len(names) == 1:
        return ds.read(frame, names[0]).reshape(*shape, 3).astype(np.float32, copy=False)
    return np.stack([ds.read(frame, name).reshape(shape) for name in names], axis=-1).astype(np.float32, copy=False)


def path_of(source: Any) -> str:
    """The path of a container, a dataset or anything with a ``path``."""
    return os.fspath(getattr(source, "path", source))


def grid_of(source: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dims, origin, spacing)`` of a flow container's grid, from its attributes."""
    ds = headrace.open(path_of(source)) if not hasattr(source, "attributes") else source
    attributes = ds.attributes
    try:
        return (np.asarray(attributes["grid_dims"], dtype=np.int64), np.asarray(attributes["grid_origin"], dtype=np.float64),
                np.asarray(attributes["grid_spacing"], dtype=np.float64))
    except KeyError as missing:
        raise UsageError(f"{path_of(source)}: not a grid (no attribute {missing})") from None


POINT_BYTES = 12  # float32 x 3


def sides_text(block: Sequence[int]) -> str:
    """A block's sides as messages write them: ``32x32x16``."""
    return "x".join(str(int(side)) for side in block)


def blocks_text(count: int) -> str:
    """``1 block``, ``1,024 blocks``."""
    return f"{count:,} block{'s' if count != 1 else ''}"
