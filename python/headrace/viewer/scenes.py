"""What the viewer draws of a file: particles as sphere glyphs or a volume ray-marched, each frame given
resident (a :class:`headrace.stream.Frame` in GPU memory, or host memory for the CPU reference), from any
camera, in the look the page sets.

A scene belongs to one session: its renderer, look and per-frame state (a volume's value ranges and
classification) are that browser's alone. Kinds: :class:`ParticleScene` for a file with a ``particles``
field of 8 float32 (x, y, z, radius, r, g, b, a), :class:`PointSetScene` for any other point set
(:mod:`headrace.points`: positions, radius and colour from the file's fields, packed per frame on the host),
:class:`VolumeScene` for a grid or AMR field (:func:`headrace.volume.is_volume`).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from headrace import _ext
from headrace.errors import UsageError
from headrace.points import (ColourBy, PointSet, StagedPoints, colour_choices, component_range, find_positions,
                             is_particle_record, position_names, unique)
from headrace.viewer.camera import OrbitCamera

__all__ = ["COLOUR_MAPS", "Scene", "ParticleScene", "PointSetScene", "VolumeScene", "scene_kind", "make_scene",
           "describe_file", "component_range"]

COLOUR_MAPS = ("viridis", "magma", "inferno", "plasma", "cividis", "turbo", "coolwarm", "gray")
# The record columns a particle can be coloured by, and the renderer's code for each.
PARTICLE_COLUMNS = {"x": 0, "y": 1, "z": 2, "radius": 3}
COLOUR_STORED, COLOUR_FROM_SCALARS = -1, 8
BACKGROUND = 0xFF000000  # opaque black, RGBA8 with r in the low byte


def scene_kind(ds: Any) -> str:
    """``"volume"`` or ``"particles"`` (the particles record or any point set); UsageError naming the file
    and its fields for anything else, or for a point set whose positions are ambiguous."""
    from headrace.volume import is_volume

    if is_volume(ds):
        return "volume"
    if is_particle_record(ds):
        return "particles"
    try:
        find_positions(ds)
    except UsageError as why:
        if "could be" in str(why):  # several candidates: the viewer cannot choose for the user
            raise
        raise UsageError(f"{ds.path}: neither a volume (grid or AMR attributes) nor points (a field 'particles' of 8 "
                         f"float32, a field of 3 components named {position_names()}, or fields x, y and z); "
                         f"its fields: {', '.join(f'{f.name} ({f.dtype} x{f.components})' for f in ds.fields)}") from None
    return "particles"


def particle_scalar_fields(ds: Any) -> list[str]:
    """The fields a particle can be coloured by beside its record: one float32 a particle in every frame."""
    counts = [ds.element_count(t, "particles") for t in range(len(ds.frames))]
    return [f.name for f in ds.fields if f.name != "particles" and f.dtype == "float32" and f.components == 1
            and [ds.element_count(t, f.name) for t in range(len(ds.frames))] == counts]


def describe_file(ds: Any) -> dict[str, Any]:
    """A file as the page's ``hello`` lists it (docs/viewer.md), from its index alone: no renderer is made."""
    from headrace.volume import _default_field, field_value_range

    kind = scene_kind(ds)
    described = {"name": os.path.basename(ds.path), "kind": kind, "frames": len(ds.frames),
                 "times": [float(f.time) for f in ds.frames]}
    if kind == "particles" and is_particle_record(ds):
        return {**described, "fields": ["particles"], "value_range": None,
                "colour_by": ["stored", *PARTICLE_COLUMNS, *particle_scalar_fields(ds)]}
    if kind == "particles":
        return {**described, "fields": PointSet(ds).fields, "value_range": None, "colour_by": ["stored", *colour_choices(ds)]}
    field = _default_field(ds)
    lo, hi = field_value_range(ds, field)
    return {**described, "fields": [field], "value_range": [lo, hi], "iso": (lo + hi) / 2, "colour_by": []}


def colour_table(name: str) -> np.ndarray:
    """(256, 4) float32 RGBA of a matplotlib colour map; UsageError naming the maps offered."""
    if name not in COLOUR_MAPS:
        raise UsageError(f"colour map {name!r}: expected one of {', '.join(COLOUR_MAPS)}")
    from headrace.volume import _colour_table

    return _colour_table(name)


class Scene:
    """One file as one session draws it. Subclasses set :attr:`kind`, :attr:`fields` (streamed),
    :attr:`style` and implement :meth:`prepare`, :meth:`render` and :meth:`set_style`. :attr:`host_frames`:
    the fields are streamed into host memory whatever the device (the scene copies what it draws)."""

    kind = ""
    host_frames = False

    def __init__(self, ds: Any, device: int | None, width: int, height: int) -> None:
        self.dataset, self.device, self.width, self.height = ds, device, width, height
        self.fields: list[str] = []
        self.style: dict[str, Any] = {}
        self.home = OrbitCamera(target=(0.0, 0.0, 0.0), distance=1.0)

    def prepare(self, frame: Any, stream: int) -> None:
        """A newly delivered frame: per-frame work that any camera reuses (nothing by default)."""

    def render(self, frame: Any, camera: OrbitCamera, stream: int) -> np.ndarray:
        raise NotImplementedError

    def set_style(self, changes: dict[str, Any], stream: int) -> bool:
        """Applies the page's style keys; True when the fields to stream changed (the stream is remade)."""
        raise NotImplementedError


class ParticleScene(Scene):
    """Sphere glyphs of the ``particles`` field; colour by the stored colour, a record column or a
    per-particle float32 field of the file (streamed only while it is chosen)."""

    kind = "particles"

    def __init__(self, ds: Any, device: int | None, width: int, height: int) -> None:
        from headrace.render import view_box

        super().__init__(ds, device, width, height)
        self.fields = ["particles"]
        self.scalar_fields = particle_scalar_fields(ds)
        self.home = OrbitCamera.framing(view_box(ds, 0, "particles"))
        self._renderer = _ext.FrameRenderer(self.home.spec(width, height), BACKGROUND, -1 if device is None else device)
        self.style = {"radius_scale": 1.0, "colour_by": "stored", "colour_map": "viridis"}
        self._ranges: dict[str, tuple[float, float]] = {}

    def _range_of(self, source: str) -> tuple[float, float]:
        if source not in self._ranges:
            if source in PARTICLE_COLUMNS:
                self._ranges[source] = component_range(self.dataset, "particles", PARTICLE_COLUMNS[source])
            else:
                self._ranges[source] = component_range(self.dataset, source)
        return self._ranges[source]

    def set_style(self, changes: dict[str, Any], stream: int) -> bool:
        style: dict[str, Any] = {**self.style, **{k: changes[k] for k in ("radius_scale", "colour_by", "colour_map") if k in changes}}
        source = str(style["colour_by"])
        if source not in ("stored", *PARTICLE_COLUMNS, *self.scalar_fields):
            raise UsageError(f"{self.dataset.path}: cannot colour by {source!r} (choices: stored, "
                             f"{', '.join([*PARTICLE_COLUMNS, *self.scalar_fields])})")
        scale = float(style["radius_scale"])
        if source == "stored":
            self._renderer.set_look(radius_scale=scale)
        else:
            lo, hi = self._range_of(source)
            code = PARTICLE_COLUMNS.get(source, COLOUR_FROM_SCALARS)
            self._renderer.set_look(radius_scale=scale, colour_by=code,
                                    table=colour_table(str(style["colour_map"])).reshape(-1).tolist(), lo=lo, hi=hi)
        style["radius_scale"] = scale
        self.style = style
        fields = ["particles", source] if source in self.scalar_fields else ["particles"]
        changed, self.fields = fields != self.fields, fields
        return changed

    def render(self, frame: Any, camera: OrbitCamera, stream: int) -> np.ndarray:
        renderer = self._renderer
        renderer.set_camera(camera.spec(self.width, self.height))
        particles = frame["particles"]
        scalars = frame[self.fields[1]] if len(self.fields) > 1 else None
        if self.device is None:
            renderer.clear()
            renderer.draw_host(particles.numpy(), 0, None if scalars is None else scalars.numpy().reshape(-1))
            return renderer.image()
        frame.wait_on_stream(stream)
        renderer.clear(stream)
        renderer.draw_device(_address(particles), particles.shape[0], 0, stream,
                             0 if scalars is None else _address(scalars))
        return renderer.image(stream)


class PointSetScene(Scene):
    """Sphere glyphs of any point set (:class:`headrace.points.PointSet`: positions, radius and colour from
    the file's fields or defaults); colour by the stored colour or any field, a component or a length of
    one (streamed only while it is chosen). Each delivered frame is streamed into host memory, packed into
    the renderer's records there and, on a GPU, copied into its memory (:func:`headrace.points.upload`);
    a camera or look change draws those records again."""

    kind = "particles"
    host_frames = True

    def __init__(self, ds: Any, device: int | None, width: int, height: int) -> None:
        super().__init__(ds, device, width, height)
        self.points = PointSet(ds)
        self.fields = list(self.points.fields)
        self.home = OrbitCamera.framing(self.points.home_box)
        self._renderer = _ext.FrameRenderer(self.home.spec(width, height), BACKGROUND, -1 if device is None else device)
        self.style = {"radius_scale": 1.0, "colour_by": "stored", "colour_map": "viridis"}
        self._colour_by: ColourBy | None = None
        self._arrays: dict[str, np.ndarray] | None = None  # the prepared frame's fields (copies)
        self._drawn: StagedPoints | None = None  # the prepared frame where the renderer draws it

    def set_style(self, changes: dict[str, Any], stream: int) -> bool:
        style: dict[str, Any] = {**self.style, **{k: changes[k] for k in ("radius_scale", "colour_by", "colour_map") if k in changes}}
        source = str(style["colour_by"])
        ds = self.dataset
        try:
            colour_by = None if source == "stored" else ColourBy.parse(ds, source)
        except (UsageError, KeyError):
            raise UsageError(f"{ds.path}: cannot colour by {source!r} (choices: stored, {', '.join(colour_choices(ds))})") from None
        scale = float(style["radius_scale"])
        if colour_by is None:
            self._renderer.set_look(radius_scale=scale)
        else:
            lo, hi = colour_by.value_range(ds)
            self._renderer.set_look(radius_scale=scale, colour_by=COLOUR_FROM_SCALARS,
                                    table=colour_table(str(style["colour_map"])).reshape(-1).tolist(), lo=lo, hi=hi)
        style["radius_scale"] = scale
        self.style, self._colour_by = style, colour_by
        fields = unique([*self.points.fields, *([colour_by.field] if colour_by else [])])
        changed, self.fields = fields != self.fields, fields
        if not changed and self._arrays is not None:
            self._pack()  # the frame on screen, coloured by another component of a field it holds
        return changed

    def prepare(self, frame: Any, stream: int) -> None:
        self._arrays = {name: np.array(frame[name].numpy()) for name in self.fields}
        self._pack()

    def _pack(self) -> None:
        assert self._arrays is not None
        records, _ = self.points.pack(self._arrays)
        colour_by = self._colour_by
        scalars = colour_by.values(self._arrays[colour_by.field]) if colour_by is not None else None
        self._drawn = StagedPoints(records, scalars, self.device)

    def render(self, frame: Any, camera: OrbitCamera, stream: int) -> np.ndarray:
        self._renderer.set_camera(camera.spec(self.width, self.height))
        assert self._drawn is not None
        return self._drawn.draw(self._renderer, stream)


class VolumeScene(Scene):
    """A float32 field of a grid or AMR file, ray-marched (direct volume rendering or an iso-surface)
    with a transfer function fixed across frames: a colour map and an opacity curve over the field's range
    over every frame."""

    kind = "volume"

    def __init__(self, ds: Any, device: int | None, width: int, height: int, footprint: float = 0.0) -> None:
        from headrace.volume import _default_field, field_value_range

        super().__init__(ds, device, width, height)
        field = _default_field(ds)
        self.fields = [field]
        self._native = _ext.VolumeRenderer(ds.container, ds.container.field_index(field), -1 if device is None else device)
        self.value_range = field_value_range(ds, field)
        self.home = OrbitCamera.framing(self._native.topology.domain)
        self.footprint = float(footprint)
        lo, hi = self.value_range
        self.style = {"colour_map": "viridis", "opacity": [[0.1, 0.0], [1.0, 0.2]], "mode": "dvr", "iso": (lo + hi) / 2}
        self._prepared = False
        self._apply()

    def _apply(self) -> None:
        style = self.style
        table = colour_table(str(style["colour_map"])).copy()
        points = np.asarray(style["opacity"], dtype=np.float64)
        centres = (np.arange(table.shape[0]) + 0.5) / table.shape[0]
        table[:, 3] = np.interp(centres, points[:, 0], points[:, 1])
        lo, hi = self.value_range
        self._native.set_view(table.reshape(-1).tolist(), lo, hi, style["mode"] == "iso", float(style["iso"]), BACKGROUND,
                              0.0, 1.0, True, self.footprint)

    def set_style(self, changes: dict[str, Any], stream: int) -> bool:
        style: dict[str, Any] = {**self.style, **{k: changes[k] for k in ("colour_map", "opacity", "mode", "iso") if k in changes}}
        if style["mode"] not in ("dvr", "iso"):
            raise UsageError(f"mode {style['mode']!r}: expected dvr or iso")
        style["opacity"] = _opacity_points(style["opacity"])
        style["iso"] = float(style["iso"])
        colour_table(str(style["colour_map"]))  # names the maps offered
        previous, self.style = self.style, style
        try:
            self._apply()
        except Exception:
            self.style = previous
            raise
        if self._prepared:
            self._native.classify(stream)
        return False

    def prepare(self, frame: Any, stream: int) -> None:
        scalars = frame[self.fields[0]]
        if self.device is None:
            self._native.prepare_host(scalars.numpy().reshape(-1))
        else:
            frame.wait_on_stream(stream)
            self._native.prepare_device(_address(scalars), stream)
        self._prepared = True

    def render(self, frame: Any, camera: OrbitCamera, stream: int) -> np.ndarray:
        scalars = frame[self.fields[0]]
        spec = camera.spec(self.width, self.height)
        if self.device is None:
            return self._native.render_host(scalars.numpy().reshape(-1), spec)
        return self._native.render_device(_address(scalars), spec, stream)


def _opacity_points(points: Any) -> list[list[float]]:
    """Control points [fraction, opacity]: at least two, fractions ascending in 0..1, opacities in 0..1."""
    try:
        array = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError):
        array = np.empty((0,))
    ok = (array.ndim == 2 and len(array) >= 2 and array.shape[-1] == 2 and np.isfinite(array).all()
          and (array >= 0).all() and (array <= 1).all() and (np.diff(array[:, 0]) >= 0).all())
    if not ok:
        raise UsageError(f"opacity {points!r}: expected two or more [fraction, opacity] points, fractions ascending, "
                         "both in 0..1")
    return array.tolist()


def _address(array: Any) -> int:
    """The device address of a frame's field (a :class:`headrace.stream.FieldArray` in GPU memory)."""
    return int(array.__cuda_array_interface__["data"][0])


def make_scene(ds: Any, device: int | None, width: int, height: int, footprint: float = 0.0) -> Scene:
    """The scene of a file's kind (:func:`scene_kind`): a volume's with its pixel footprint, the particles
    record's, or a point set's."""
    if scene_kind(ds) == "volume":
        return VolumeScene(ds, device, width, height, footprint)
    if is_particle_record(ds):
        return ParticleScene(ds, device, width, height)
    return PointSetScene(ds, device, width, height)
