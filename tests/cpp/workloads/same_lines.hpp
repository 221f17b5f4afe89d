// Bit-identical streamlines: the same offsets and every coordinate of every point.
#pragma once

#include <gtest/gtest.h>

#include "headrace/workloads/streamlines/tracer.hpp"

namespace headrace::testing {

inline ::testing::AssertionResult same_lines(const workloads::streamlines::Polylines& expected,
                                             const workloads::streamlines::Polylines& got) {
  if (expected.offsets != got.offsets) return ::testing::AssertionFailure() << "the lines' offsets differ";
  for (std::size_t n = 0; n < expected.points.size(); ++n) {
    const auto& a = expected.points[n];
    const auto& b = got.points[n];
    if (a.x != b.x || a.y != b.y || a.z != b.z)
      return ::testing::AssertionFailure() << "point " << n << ": (" << a.x << ", " << a.y << ", " << a.z << ") against ("
                                           << b.x << ", " << b.y << ", " << b.z << ")";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace headrace::testing
