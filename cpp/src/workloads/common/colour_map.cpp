#include "headrace/workloads/common/colour_map.hpp"

#include <cmath>
#include <string>

#include "headrace/error.hpp"

namespace headrace::workloads::common {

void check_colour_map(std::span<const float> rgba, float lo, float hi, const char* what) {
  HEADRACE_EXPECT(rgba.size() == 4 * static_cast<std::size_t>(colour_map_entries), UsageError,
                  std::string(what) + " holds " + std::to_string(colour_map_entries) + " RGBA entries, got " +
                      std::to_string(rgba.size()) + " floats");
  HEADRACE_EXPECT(std::isfinite(lo) && std::isfinite(hi) && lo < hi, UsageError,
                  std::string(what) + "'s value range needs two finite numbers, the first below the second, got " +
                      std::to_string(lo) + ".." + std::to_string(hi));
}

}  // namespace headrace::workloads::common
