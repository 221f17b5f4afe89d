// The Hilbert curve: a bijection on the cube whose consecutive indices are neighbouring points.
#include "headrace/workloads/streamlines/hilbert.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

namespace headrace::workloads::streamlines {
namespace {

TEST(HilbertCurve, VisitsEveryPointOnceAndStepsToANeighbourEachTime) {
  for (unsigned bits = 1; bits <= 5; ++bits) {
    const std::uint32_t side = 1u << bits;
    const std::uint64_t count = std::uint64_t{side} * side * side;
    std::vector<bool> seen(count, false);
    std::uint32_t previous[3] = {0, 0, 0};
    for (std::uint64_t index = 0; index < count; ++index) {
      std::uint32_t p[3];
      hilbert_point(index, bits, p);
      ASSERT_LT(p[0], side);
      ASSERT_LT(p[1], side);
      ASSERT_LT(p[2], side);
      const std::uint64_t cell = p[0] + side * (p[1] + std::uint64_t{side} * p[2]);
      ASSERT_FALSE(seen[cell]) << "bits " << bits << " index " << index;
      seen[cell] = true;
      ASSERT_EQ(hilbert_index(p[0], p[1], p[2], bits), index) << "bits " << bits;
      if (index > 0) {
        const int distance = std::abs(int(p[0]) - int(previous[0])) + std::abs(int(p[1]) - int(previous[1])) +
                             std::abs(int(p[2]) - int(previous[2]));
        ASSERT_EQ(distance, 1) << "bits " << bits << " index " << index;
      }
      previous[0] = p[0], previous[1] = p[1], previous[2] = p[2];
    }
  }
}

TEST(HilbertCurve, StartsAtTheOriginAndWorksForLargeCubes) {
  std::uint32_t p[3];
  hilbert_point(0, 10, p);
  EXPECT_EQ(p[0] + p[1] + p[2], 0u);
  const unsigned bits = 21;  // 2^63 indices: the largest cube a 64-bit index holds
  for (std::uint32_t x : {0u, 1u, 12345u, (1u << 21) - 1}) {
    hilbert_point(hilbert_index(x, 777, (1u << 20) + 3, bits), bits, p);
    EXPECT_EQ(p[0], x);
    EXPECT_EQ(p[1], 777u);
    EXPECT_EQ(p[2], (1u << 20) + 3);
  }
}

}  // namespace
}  // namespace headrace::workloads::streamlines
