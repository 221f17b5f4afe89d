// A velocity field held whole in memory (float32 x 3 per grid point, x fastest, then y, then z): the
// in-core reference that out-of-core data managers are checked against.
#pragma once

#include <cstddef>

#include "headrace/workloads/streamlines/streamline_math.hpp"

namespace headrace::workloads::streamlines {

struct InMemoryField {
  GridGeometry grid;
  const float* velocity = nullptr;  // 3 * dims.x * dims.y * dims.z floats; not owned

  HEADRACE_HD Vec3 at(std::int32_t i, std::int32_t j, std::int32_t k) const {
    const std::size_t n = static_cast<std::size_t>(i) +
                          static_cast<std::size_t>(grid.dims[0]) * (static_cast<std::size_t>(j) +
                                                                    static_cast<std::size_t>(grid.dims[1]) * k);
    return {velocity[3 * n], velocity[3 * n + 1], velocity[3 * n + 2]};
  }

  HEADRACE_HD bool operator()(const Vec3& p, Vec3& v) const {
    std::int32_t c[3];
    float f[3];
    if (!grid.locate(p, c, f)) return false;
    Vec3 corner[8];
    for (int n = 0; n < 8; ++n) corner[n] = at(c[0] + (n & 1), c[1] + ((n >> 1) & 1), c[2] + ((n >> 2) & 1));
    v = trilinear(corner, f);
    return true;
  }
};

}  // namespace headrace::workloads::streamlines
