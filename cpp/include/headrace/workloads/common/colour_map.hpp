// Colour maps: a table of colour_map_entries RGBA entries spread evenly over a value range [lo, hi], as the
// sphere renderer colours glyphs by a scalar and the volume renderer's transfer function maps a sample.
// colour_map_entry is HEADRACE_HD: kernels and CPU references pick the same entry.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>

#include "headrace/detail/host_device.hpp"

namespace headrace::workloads::common {

inline constexpr std::int32_t colour_map_entries = 256;

// The entry `value` takes: values outside [lo, hi] the end entries, NaN the first.
[[nodiscard]] HEADRACE_HD inline std::int32_t colour_map_entry(float value, float lo, float hi) {
  const float t = (value - lo) / (hi - lo) * static_cast<float>(colour_map_entries);
  return static_cast<std::int32_t>(fminf(fmaxf(t, 0.0f), static_cast<float>(colour_map_entries - 1)));
}

// Throws UsageError, naming the map as `what` ("a colour table"), unless it holds colour_map_entries
// RGBA entries over a finite, non-empty range.
void check_colour_map(std::span<const float> rgba, float lo, float hi, const char* what);

}  // namespace headrace::workloads::common
