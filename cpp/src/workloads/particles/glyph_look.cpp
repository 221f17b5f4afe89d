#include "headrace/workloads/particles/glyph_look.hpp"

#include <cmath>
#include <string>

#include "headrace/error.hpp"

namespace headrace::workloads::particles {

void check_glyph_look(const GlyphLook& look) {
  HEADRACE_EXPECT(std::isfinite(look.radius_scale) && look.radius_scale > 0, UsageError,
                  "a radius scale must be positive and finite, got " + std::to_string(look.radius_scale));
  HEADRACE_EXPECT(look.colour_by == colour_stored || (look.colour_by >= 0 && look.colour_by <= 3) ||
                      look.colour_by == colour_from_scalars,
                  UsageError, "colour source " + std::to_string(look.colour_by) + ": expected the stored colour, x, y, z, "
                                  "radius or a per-particle field");
  if (look.colour_by == colour_stored) return;
  HEADRACE_EXPECT(look.table.size() == 4 * static_cast<std::size_t>(colour_table_entries), UsageError,
                  "a colour table holds " + std::to_string(colour_table_entries) + " RGBA entries, got " +
                      std::to_string(look.table.size()) + " floats");
  HEADRACE_EXPECT(std::isfinite(look.lo) && std::isfinite(look.hi) && look.lo < look.hi, UsageError,
                  "a colour range needs two finite numbers, the first below the second, got " + std::to_string(look.lo) +
                      ".." + std::to_string(look.hi));
}

}  // namespace headrace::workloads::particles
