"""The viewer's scenes of sphere glyphs: what the particles record's scene and a point set's share
(:class:`GlyphScene`), and a point set's (:class:`PointSetScene`). A scene draws each frame given resident
(a :class:`headrace.stream.Frame`) from any camera in the look the page sets; it belongs to one session."""

from __future__ import annotations

from typing import Any

import numpy as np

from headrace import _ext
from headrace.errors import UsageError
from headrace.imaging import COLOUR_MAPS, OrbitCamera, colour_table, packed_background
from headrace.workloads.points.point_set import COLOUR_FROM_SCALARS, ColourBy, PointSet, colour_choices, find_positions, unique
from headrace.workloads.points.staged import StagedPoints

__all__ = ["GLYPH_STYLE", "GlyphScene", "PointSetScene"]

GLYPH_STYLE = {"radius_scale": 1.0, "colour_by": "stored", "colour_map": "viridis"}  # the page's keys, and their defaults


class GlyphScene:
    """Sphere glyphs of a file framed on ``home_box``, streaming ``fields``: the renderer, the home camera
    and the look (radius scale; the stored colour, or a colour map over a range of values) that both
    glyph scenes set. ``footprint`` is a volume's level of detail: spheres are drawn whole, whatever it is."""

    kind = "particles"
    host_frames = False

    def __init__(self, ds: Any, device: int | None, width: int, height: int, home_box: tuple[Any, Any],
                 fields: list[str]) -> None:
        self.dataset, self.device, self.width, self.height = ds, device, width, height
        self.fields = fields
        self.home = OrbitCamera.framing(home_box)
        self._renderer = _ext.FrameRenderer(self.home.spec(width, height), packed_background((0, 0, 0)),
                                            -1 if device is None else device)
        self.style: dict[str, Any] = dict(GLYPH_STYLE)

    def restyled(self, changes: dict[str, Any]) -> dict[str, Any]:
        """The style with the page's changes to the glyph keys, its radius scale a number."""
        style = {**self.style, **{k: changes[k] for k in GLYPH_STYLE if k in changes}}
        style["radius_scale"] = float(style["radius_scale"])
        return style

    def apply_look(self, style: dict[str, Any], colour_by: int | None = None,
                  value_range: tuple[float, float] = (0.0, 1.0)) -> None:
        """The renderer's look: the stored colour (``colour_by`` None), or ``colour_by`` (a record column or
        :data:`COLOUR_FROM_SCALARS`) through the style's colour map over ``value_range``."""
        if colour_by is None:
            self._renderer.set_look(radius_scale=style["radius_scale"])
            return
        table = colour_table(str(style["colour_map"]), COLOUR_MAPS)
        self._renderer.set_look(radius_scale=style["radius_scale"], colour_by=colour_by,
                                table=table.reshape(-1).tolist(), lo=value_range[0], hi=value_range[1])

    def prepare(self, frame: Any, stream: int) -> None:
        """A newly delivered frame: nothing to do before any camera draws it."""


class PointSetScene(GlyphScene):
    """Sphere glyphs of any point set (:class:`PointSet`: positions, radius and colour from the file's
    fields or defaults); colour by the stored colour or any field, a component or a length of one
    (streamed only while it is chosen). Each delivered frame is streamed into host memory, packed into the
    renderer's records there and, on a GPU, copied into its memory (:func:`headrace.workloads.points.upload`);
    a camera or look change draws those records again."""

    host_frames = True

    def __init__(self, ds: Any, device: int | None, width: int, height: int, footprint: float = 0.0) -> None:
        self.points = PointSet(ds)
        super().__init__(ds, device, width, height, self.points.home_box, list(self.points.fields))
        self._colour_by: ColourBy | None = None
        self._arrays: dict[str, np.ndarray] | None = None  # the prepared frame's fields (copies)
        self._drawn: StagedPoints | None = None  # the prepared frame where the renderer draws it

    @staticmethod
    def draws(ds: Any) -> bool:
        """Whether the file holds points: UsageError where its positions could be several fields (the
        viewer cannot choose for the user)."""
        try:
            find_positions(ds)
        except UsageError as why:
            if "could be" in str(why):
                raise
            return False
        return True

    @staticmethod
    def describe(ds: Any) -> dict[str, Any]:
        """The page's ``hello`` entries of the file: its fields and what a point can be coloured by."""
        return {"fields": PointSet(ds).fields, "value_range": None, "colour_by": ["stored", *colour_choices(ds)]}

    def set_style(self, changes: dict[str, Any], stream: int) -> bool:
        """Applies the page's style keys; True when the fields to stream changed (the stream is remade)."""
        style = self.restyled(changes)
        source = str(style["colour_by"])
        ds = self.dataset
        try:
            colour_by = None if source == "stored" else ColourBy.parse(ds, source)
        except (UsageError, KeyError):
            raise UsageError(f"{ds.path}: cannot colour by {source!r} (choices: stored, {', '.join(colour_choices(ds))})") from None
        if colour_by is None:
            self.apply_look(style)
        else:
            self.apply_look(style, COLOUR_FROM_SCALARS, colour_by.value_range(ds))
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
