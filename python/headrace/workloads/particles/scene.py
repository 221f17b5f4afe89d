"""The viewer's scene of the particles record: sphere glyphs of each frame given resident (in GPU memory,
or host memory for the CPU reference), coloured by the stored colour, a record column or a per-particle
float32 field of the file."""

from __future__ import annotations

from typing import Any

import numpy as np

from headrace.errors import UsageError
from headrace.imaging import OrbitCamera, device_address, value_range, view_box
from headrace.workloads.points import COLOUR_FROM_SCALARS, RECORD_FIELD, GlyphScene, is_particle_record

__all__ = ["PARTICLE_COLUMNS", "ParticleScene", "particle_scalar_fields"]

# The record columns a particle can be coloured by, and the renderer's code for each.
PARTICLE_COLUMNS = {"x": 0, "y": 1, "z": 2, "radius": 3}


def particle_scalar_fields(ds: Any) -> list[str]:
    """The fields a particle can be coloured by beside its record: one float32 a particle in every frame."""
    counts = [ds.element_count(t, RECORD_FIELD) for t in range(len(ds.frames))]
    return [f.name for f in ds.fields if f.name != RECORD_FIELD and f.dtype == "float32" and f.components == 1
            and [ds.element_count(t, f.name) for t in range(len(ds.frames))] == counts]


class ParticleScene(GlyphScene):
    """Sphere glyphs of the ``particles`` field; colour by the stored colour, a record column or a
    per-particle float32 field of the file (streamed only while it is chosen)."""

    def __init__(self, ds: Any, device: int | None, width: int, height: int, footprint: float = 0.0) -> None:
        super().__init__(ds, device, width, height, view_box(ds, 0, RECORD_FIELD), [RECORD_FIELD])
        self.scalar_fields = particle_scalar_fields(ds)
        self._ranges: dict[str, tuple[float, float]] = {}

    @staticmethod
    def draws(ds: Any) -> bool:
        """Whether the file holds the particles record (8 float32 a particle)."""
        return is_particle_record(ds)

    @staticmethod
    def describe(ds: Any) -> dict[str, Any]:
        """The page's ``hello`` entries of the file: its record and what a particle can be coloured by."""
        return {"fields": [RECORD_FIELD], "value_range": None,
                "colour_by": ["stored", *PARTICLE_COLUMNS, *particle_scalar_fields(ds)]}

    def _range_of(self, source: str) -> tuple[float, float]:
        if source not in self._ranges:
            if source in PARTICLE_COLUMNS:
                self._ranges[source] = value_range(self.dataset, RECORD_FIELD, PARTICLE_COLUMNS[source])
            else:
                self._ranges[source] = value_range(self.dataset, source)
        return self._ranges[source]

    def set_style(self, changes: dict[str, Any], stream: int) -> bool:
        """Applies the page's style keys; True when the fields to stream changed (the stream is remade)."""
        style = self.restyled(changes)
        source = str(style["colour_by"])
        if source not in ("stored", *PARTICLE_COLUMNS, *self.scalar_fields):
            raise UsageError(f"{self.dataset.path}: cannot colour by {source!r} (choices: stored, "
                             f"{', '.join([*PARTICLE_COLUMNS, *self.scalar_fields])})")
        if source == "stored":
            self.apply_look(style)
        else:
            self.apply_look(style, PARTICLE_COLUMNS.get(source, COLOUR_FROM_SCALARS), self._range_of(source))
        self.style = style
        fields = [RECORD_FIELD, source] if source in self.scalar_fields else [RECORD_FIELD]
        changed, self.fields = fields != self.fields, fields
        return changed

    def render(self, frame: Any, camera: OrbitCamera, stream: int) -> np.ndarray:
        renderer = self._renderer
        renderer.set_camera(camera.spec(self.width, self.height))
        particles = frame[RECORD_FIELD]
        scalars = frame[self.fields[1]] if len(self.fields) > 1 else None
        if self.device is None:
            renderer.clear()
            renderer.draw_host(particles.numpy(), 0, None if scalars is None else scalars.numpy().reshape(-1))
            return renderer.image()
        frame.wait_on_stream(stream)
        renderer.clear(stream)
        renderer.draw_device(device_address(particles), particles.shape[0], 0, stream,
                             0 if scalars is None else device_address(scalars))
        return renderer.image(stream)
