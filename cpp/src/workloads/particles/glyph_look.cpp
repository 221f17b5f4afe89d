#include "headrace/workloads/particles/glyph_look.hpp"

#include <cmath>
#include <string>

#include "headrace/error.hpp"
#include "headrace/workloads/common/colour_map.hpp"

namespace headrace::workloads::particles {

void check_glyph_look(const GlyphLook& look) {
  HEADRACE_EXPECT(std::isfinite(look.radius_scale) && look.radius_scale > 0, UsageError,
                  "a radius scale must be positive and finite, got " + std::to_string(look.radius_scale));
  HEADRACE_EXPECT(look.colour_by == colour_stored || (look.colour_by >= 0 && look.colour_by <= 3) ||
                      look.colour_by == colour_from_scalars,
                  UsageError, "colour source " + std::to_string(look.colour_by) + ": expected the stored colour, x, y, z, "
                                  "radius or a per-particle field");
  if (look.colour_by == colour_stored) return;
  common::check_colour_map(look.table, look.lo, look.hi, "a colour table");
}

}  // namespace headrace::workloads::particles
