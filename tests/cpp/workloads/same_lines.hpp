// Streamlines compared: bit-identical (the same offsets, ends, every coordinate and integration time of every point), or
// within a tolerance (the GPU against its CPU reference).
#pragma once

#include <cmath>

#include <gtest/gtest.h>

#include "headrace/workloads/streamlines/tracer.hpp"

namespace headrace::testing {

inline ::testing::AssertionResult close_lines(const workloads::streamlines::Polylines& expected,
                                              const workloads::streamlines::Polylines& got, float tolerance) {
  if (expected.offsets != got.offsets) return ::testing::AssertionFailure() << "the lines' offsets differ";
  if (expected.lines.size() != got.lines.size()) return ::testing::AssertionFailure() << "the line counts differ";
  for (std::size_t n = 0; n < expected.lines.size(); ++n)
    if (expected.lines[n].forward_end != got.lines[n].forward_end ||
        expected.lines[n].backward_end != got.lines[n].backward_end)
      return ::testing::AssertionFailure() << "line " << n << " ends differently";
  for (std::size_t n = 0; n < expected.points.size(); ++n) {
    const auto& a = expected.points[n];
    const auto& b = got.points[n];
    if (!(std::abs(a.x - b.x) <= tolerance && std::abs(a.y - b.y) <= tolerance && std::abs(a.z - b.z) <= tolerance))
      return ::testing::AssertionFailure() << "point " << n << ": (" << a.x << ", " << a.y << ", " << a.z << ") against ("
                                           << b.x << ", " << b.y << ", " << b.z << ")";
  }
  if (expected.times.size() != got.times.size()) return ::testing::AssertionFailure() << "the integration times' counts differ";
  for (std::size_t n = 0; n < expected.times.size(); ++n)
    if (!(std::abs(expected.times[n] - got.times[n]) <= tolerance))
      return ::testing::AssertionFailure() << "point " << n << ": integration time " << expected.times[n] << " against "
                                           << got.times[n];
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult same_lines(const workloads::streamlines::Polylines& expected,
                                             const workloads::streamlines::Polylines& got) {
  return close_lines(expected, got, 0.0f);
}

}  // namespace headrace::testing
