"""The point-set workload: any file's points (positions, radius and colour from its fields or defaults,
colour by any field) as sphere glyphs.

    renderer = headrace.workloads.points.PointSetRenderer("cloud.hrc", colour_by="temperature")
    renderer.render(0); image = renderer.image()

:class:`PointSet` says which fields make a point and packs a frame into the sphere renderer's records;
:class:`PointSetRenderer` draws a file frame by frame; :class:`PointSetScene` is the viewer's scene of it.
:class:`LatticeScene` draws a flow series' vectors as a lattice of glyphs coloured by speed.
"""

from headrace.workloads.points.lattice import LATTICE_SIDE, LatticeScene, vector_field
from headrace.workloads.points.point_set import (COLOUR_FROM_SCALARS, POSITION_NAMES, RECORD_FIELD, ColourBy, PointSet,
                                                 colour_choices, default_radius, find_positions, is_particle_record,
                                                 position_names, unique)
from headrace.workloads.points.renderer import POINT_OPTIONS, PointSetRenderer, draws_point_set
from headrace.workloads.points.scene import GLYPH_STYLE, GlyphScene, PointSetScene
from headrace.workloads.points.staged import StagedPoints, upload

__all__ = ["POSITION_NAMES", "position_names", "RECORD_FIELD", "COLOUR_FROM_SCALARS", "ColourBy", "PointSet",
           "is_particle_record", "find_positions", "default_radius", "colour_choices", "unique", "upload", "StagedPoints",
           "POINT_OPTIONS", "PointSetRenderer", "draws_point_set", "GLYPH_STYLE", "GlyphScene", "PointSetScene",
           "LATTICE_SIDE", "LatticeScene", "vector_field"]
