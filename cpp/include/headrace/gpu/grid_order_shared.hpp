// Where a grid point is stored in a layout of units (rows, native blocks, Hilbert partitions): the map a
// streamed grid field is put into grid order with (x fastest, then y, then z), on the GPU
// (grid_order.cu) and on the CPU (gather_grid_order_host) by the same code. The Python twin is
// headrace.grid_layouts.GridLayout.positions.
#pragma once

#include <cstdint>

#include "headrace/detail/host_device.hpp"

namespace headrace::gpu {

// A grid of dims points stored in units of unit points, units_across[0] x units_across[1] x ... (x
// fastest), each unit's points in its local order: x fastest, or the order a table gives (Hilbert).
struct GridUnits {
  std::uint64_t dims[3] = {1, 1, 1};          // X, Y, Z
  std::uint64_t unit[3] = {1, 1, 1};          // UX, UY, UZ
  std::uint64_t units_across[2] = {1, 1};     // units along x and along y (partial ones included)

  [[nodiscard]] HEADRACE_HD std::uint64_t points() const { return dims[0] * dims[1] * dims[2]; }
  [[nodiscard]] HEADRACE_HD std::uint64_t unit_points() const { return unit[0] * unit[1] * unit[2]; }
};

// The stored position (element index) of grid point `point` (x fastest). local_order: a unit's
// unit_points() entries, the stored place of each local point (x fastest); nullptr when they are the same.
[[nodiscard]] HEADRACE_HD inline std::uint64_t stored_position(const GridUnits& g, const std::uint32_t* local_order,
                                                               std::uint64_t point) {
  const std::uint64_t x = point % g.dims[0], y = point / g.dims[0] % g.dims[1], z = point / (g.dims[0] * g.dims[1]);
  const std::uint64_t unit = x / g.unit[0] + g.units_across[0] * (y / g.unit[1] + g.units_across[1] * (z / g.unit[2]));
  const std::uint64_t local = x % g.unit[0] + g.unit[0] * (y % g.unit[1] + g.unit[1] * (z % g.unit[2]));
  return unit * g.unit_points() + (local_order ? local_order[local] : local);
}

// Copies one element of `bytes` bytes (words of 4 when it is a whole number of them).
HEADRACE_HD inline void copy_element(const unsigned char* from, unsigned char* to, std::uint32_t bytes) {
  if (bytes % 4 == 0 && reinterpret_cast<std::uintptr_t>(from) % 4 == 0 && reinterpret_cast<std::uintptr_t>(to) % 4 == 0) {
    for (std::uint32_t w = 0; w < bytes / 4; ++w)
      reinterpret_cast<std::uint32_t*>(to)[w] = reinterpret_cast<const std::uint32_t*>(from)[w];
  } else {
    for (std::uint32_t b = 0; b < bytes; ++b) to[b] = from[b];
  }
}

}  // namespace headrace::gpu
