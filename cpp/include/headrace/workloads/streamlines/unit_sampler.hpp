// Trilinear sampling of a grid whose points live in units (native blocks, Hilbert chunks) handed out
// by a unit source: the block cache (user-managed) or a mapping of the file (kernel-managed). A
// source has `Handle acquire(std::uint64_t unit)`, the handle `valid()`, `unit()`, `data()` and
// `release()`. One unit is held at a time, so a thread never waits for a unit while holding another.
#pragma once

#include <cstdint>
#include <cstring>

#include "headrace/workloads/streamlines/streamline_math.hpp"

namespace headrace::workloads::streamlines {

// locate(i, j, k, element) returns the unit of grid point (i, j, k) and sets the point's element in it.
template <typename Units, typename Locate>
bool sample_units(const GridGeometry& grid, Units& units, const Locate& locate, const Vec3& p, Vec3& v) {
  std::int32_t c[3];
  float f[3];
  if (!grid.locate(p, c, f)) return false;
  Vec3 corner[8];
  typename Units::Handle held;
  for (int n = 0; n < 8; ++n) {
    std::uint64_t element = 0;
    const std::uint64_t unit = locate(c[0] + (n & 1), c[1] + ((n >> 1) & 1), c[2] + ((n >> 2) & 1), element);
    if (!held.valid() || held.unit() != unit) {
      held.release();
      held = units.acquire(unit);
    }
    float xyz[3];
    std::memcpy(xyz, held.data() + element * sizeof xyz, sizeof xyz);
    corner[n] = {xyz[0], xyz[1], xyz[2]};
  }
  v = trilinear(corner, f);
  return true;
}

}  // namespace headrace::workloads::streamlines
