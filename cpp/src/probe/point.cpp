#include "headrace/probe/point.hpp"

namespace headrace::probe {

void derive_rates(ProbePoint& point) noexcept {
  if (point.seconds <= 0.0) {
    point.gigabytes_per_second = 0.0;
    point.iops = 0.0;
    return;
  }
  point.gigabytes_per_second = static_cast<double>(point.bytes) / point.seconds / 1e9;
  point.iops = static_cast<double>(point.reads) / point.seconds;
}

std::optional<std::size_t> find_ceiling(const std::vector<ProbePoint>& points) noexcept {
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (points[i].pattern != Pattern::sequential) continue;
    if (!best || points[i].gigabytes_per_second > points[*best].gigabytes_per_second) best = i;
  }
  return best;
}

}  // namespace headrace::probe
