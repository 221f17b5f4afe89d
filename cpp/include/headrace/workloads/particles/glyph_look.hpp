// What a renderer is told about the glyphs' look (the viewer's radius scale and colour-by controls); it
// keeps the colour table where its passes read it and hands them a GlyphStyle (sphere_glyphs_shared.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "headrace/workloads/particles/sphere_glyphs_shared.hpp"

namespace headrace::workloads::particles {

struct GlyphLook {
  float radius_scale = 1.0f;
  std::int32_t colour_by = colour_stored;  // colour_stored, 0..3 (x, y, z, radius) or colour_from_scalars
  std::vector<float> table;                // common::colour_map_entries RGBA unless colour_stored
  float lo = 0.0f, hi = 1.0f;
};

// UsageError for a radius scale that is not positive and finite, an unknown colour source, or a table and
// range that are no colour map (common::check_colour_map).
void check_glyph_look(const GlyphLook& look);

}  // namespace headrace::workloads::particles
