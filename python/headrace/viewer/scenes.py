"""What the viewer draws of a file: a scene, one workload's (:class:`Scene`, the contract every workload's
viewer scene keeps), picked by the file's kind (:data:`SCENES`, in order: the first that draws a file
gets it).

A scene belongs to one session: its renderer, look and per-frame state (a volume's value ranges and
classification) are that browser's alone. Kinds: :class:`headrace.workloads.volume.VolumeScene` for a grid
or AMR field, :class:`headrace.workloads.particles.ParticleScene` for a file with a ``particles`` field of
8 float32 (x, y, z, radius, r, g, b, a), :class:`headrace.workloads.points.PointSetScene` for any other
point set (positions, radius and colour from the file's fields, packed per frame on the host),
:class:`headrace.workloads.points.LatticeScene` for a flow series in native blocks (its vectors as a lattice
of glyphs coloured by speed, under the pathlines ``headrace view --pathlines`` draws).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from headrace._deprecated import moved
from headrace.errors import UsageError
from headrace.imaging import OrbitCamera
from headrace.workloads import particles, points, volume

__all__ = ["Scene", "SceneKind", "SCENES", "scene_of", "scene_kind", "make_scene", "describe_file"]


class Scene(Protocol):
    """One file as one session draws it. :attr:`kind` is the page's (``"particles"`` or ``"volume"``),
    :attr:`fields` those streamed, :attr:`style` the page's look keys, :attr:`home` the camera it starts
    from; :attr:`host_frames`: the fields are streamed into host memory whatever the device (the scene
    copies what it draws)."""

    kind: str
    host_frames: bool
    dataset: Any
    device: int | None
    width: int
    height: int
    fields: list[str]
    style: dict[str, Any]
    home: OrbitCamera

    def prepare(self, frame: Any, stream: int) -> None:
        """A newly delivered frame (a :class:`headrace.stream.Frame`): per-frame work any camera reuses."""
        ...

    def render(self, frame: Any, camera: OrbitCamera, stream: int) -> np.ndarray:
        """The (height, width, 4) uint8 image of the prepared frame from ``camera`` (on CUDA ``stream``)."""
        ...

    def set_style(self, changes: dict[str, Any], stream: int) -> bool:
        """Applies the page's style keys; True when the fields to stream changed (the stream is remade)."""
        ...


@dataclass(frozen=True)
class SceneKind:
    """A workload's scene class as the viewer dispatches on it: its page ``kind``, which files it ``draws``,
    what the page's ``hello`` says of one (``describe``), and ``make``, a scene of one for a session
    (``make(ds, device, width, height, footprint)``; ``footprint``: a volume's pixel footprint, the viewer's
    level of detail)."""

    kind: str
    draws: Callable[[Any], bool]
    describe: Callable[[Any], dict[str, Any]]
    make: Callable[[Any, int | None, int, int, float], Scene]


SCENES = tuple(SceneKind(scene.kind, scene.draws, scene.describe, scene)
               for scene in (volume.VolumeScene, particles.ParticleScene, points.PointSetScene, points.LatticeScene))


def scene_of(ds: Any) -> SceneKind:
    """The scene kind of the first workload that draws the file; UsageError naming the file and its fields
    where none does, or where a point set's positions are ambiguous."""
    for kind in SCENES:
        if kind.draws(ds):
            return kind
    raise UsageError(f"{ds.path}: neither a volume (grid or AMR attributes), points (a field 'particles' of 8 "
                     f"float32, a field of 3 components named {points.position_names()}, or fields x, y and z) nor "
                     f"a flow in native blocks or the Hilbert layout; "
                     f"its fields: {', '.join(f'{f.name} ({f.dtype} x{f.components})' for f in ds.fields)}")


def scene_kind(ds: Any) -> str:
    """``"volume"`` or ``"particles"`` (the particles record or any point set): :func:`scene_of`'s kind."""
    return scene_of(ds).kind


def describe_file(ds: Any) -> dict[str, Any]:
    """A file as the page's ``hello`` lists it (docs/viewer.md), from its index alone: no renderer is made."""
    kind = scene_of(ds)
    return {"name": os.path.basename(ds.path), "kind": kind.kind, "frames": len(ds.frames),
            "times": [float(f.time) for f in ds.frames], **kind.describe(ds)}


def make_scene(ds: Any, device: int | None, width: int, height: int, footprint: float = 0.0) -> Scene:
    """The scene of a file's kind (:func:`scene_of`), for a session's device and image size; ``footprint``:
    a volume's pixel footprint."""
    return scene_of(ds).make(ds, device, width, height, footprint)


__getattr__ = moved(__name__, {
    "COLOUR_MAPS": "headrace.imaging", "colour_table": "headrace.imaging", "component_range": "headrace.imaging:value_range",
    "ParticleScene": "headrace.workloads.particles", "PARTICLE_COLUMNS": "headrace.workloads.particles",
    "particle_scalar_fields": "headrace.workloads.particles", "PointSetScene": "headrace.workloads.points",
    "COLOUR_FROM_SCALARS": "headrace.workloads.points", "VolumeScene": "headrace.workloads.volume"})
