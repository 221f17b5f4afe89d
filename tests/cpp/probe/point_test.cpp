// The device ceiling is the fastest sequential point; rates follow from bytes, reads and seconds.
#include <gtest/gtest.h>

#include "headrace/probe/point.hpp"

namespace headrace::probe {
namespace {

ProbePoint point(Pattern pattern, double gigabytes_per_second) {
  ProbePoint p;
  p.pattern = pattern;
  p.gigabytes_per_second = gigabytes_per_second;
  return p;
}

TEST(ProbeCeiling, IsTheFastestSequentialPointNotTheFastestPoint) {
  const std::vector<ProbePoint> points = {point(Pattern::sequential, 1.5), point(Pattern::random, 9.0),
                                          point(Pattern::sequential, 3.25), point(Pattern::sequential, 2.0)};
  EXPECT_EQ(find_ceiling(points), std::optional<std::size_t>(2));
}

TEST(ProbeCeiling, TieGoesToTheFirstPoint) {
  const std::vector<ProbePoint> points = {point(Pattern::random, 1.0), point(Pattern::sequential, 2.0),
                                          point(Pattern::sequential, 2.0)};
  EXPECT_EQ(find_ceiling(points), std::optional<std::size_t>(1));
}

TEST(ProbeCeiling, NoneWithoutSequentialPoints) {
  EXPECT_EQ(find_ceiling({point(Pattern::random, 1.0)}), std::nullopt);
  EXPECT_EQ(find_ceiling({}), std::nullopt);
}

TEST(ProbeRates, AreDecimalGigabytesAndReadsPerSecond) {
  ProbePoint p;
  p.bytes = 3'000'000'000;
  p.reads = 1500;
  p.seconds = 2.0;
  derive_rates(p);
  EXPECT_DOUBLE_EQ(p.gigabytes_per_second, 1.5);
  EXPECT_DOUBLE_EQ(p.iops, 750.0);
  p.seconds = 0.0;
  derive_rates(p);
  EXPECT_EQ(p.gigabytes_per_second, 0.0);
  EXPECT_EQ(p.iops, 0.0);
}

}  // namespace
}  // namespace headrace::probe
