#include "headrace/staging/staging_ring.hpp"

#include <gtest/gtest.h>


#include "headrace/error.hpp"

namespace headrace::staging {
namespace {

TEST(StagingRing, HandsOutAlignedRegionsInRingOrder) {
  StagingRing ring(64 << 10, false);
  const auto a = ring.try_acquire(100);
  const auto b = ring.try_acquire(8192);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->offset, 0u);
  EXPECT_EQ(a->size_bytes, 4096u);  // rounded up to 4096
  EXPECT_EQ(b->offset, 4096u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b->data) % 4096, 0u);
  EXPECT_EQ(ring.in_use_bytes(), 12288u);
  EXPECT_THROW((void)ring.try_acquire(128 << 10), UsageError);
}

TEST(StagingRing, SpaceComesBackOnlyWhenOlderRegionsAreReleased) {
  StagingRing ring(16 << 10, false);  // four 4 KiB slots
  auto a = ring.try_acquire(4096), b = ring.try_acquire(4096), c = ring.try_acquire(4096), d = ring.try_acquire(4096);
  ASSERT_TRUE(a && b && c && d);
  EXPECT_FALSE(ring.try_acquire(4096));
  ring.release(*b);  // out of order: a still holds the oldest space
  EXPECT_FALSE(ring.try_acquire(4096));
  ring.release(*a);  // a and b are free now
  const auto e = ring.try_acquire(8192);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->offset, 0u);  // wrapped to the start
  EXPECT_EQ(ring.in_use_bytes(), 16u << 10);
}

TEST(StagingRing, ARegionNeverWrapsAroundTheEnd) {
  StagingRing ring(16 << 10, false);
  auto a = ring.try_acquire(4096), b = ring.try_acquire(8192);
  ASSERT_TRUE(a && b);
  ring.release(*a);
  // 4 KiB free at the end and 4 KiB at the start: 8 KiB contiguous is not there.
  EXPECT_FALSE(ring.try_acquire(8192));
  const auto c = ring.try_acquire(4096);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->offset, 12288u);
  ring.release(*b);
  ring.release(*c);
  EXPECT_EQ(ring.in_use_bytes(), 0u);
  EXPECT_EQ(ring.try_acquire(16 << 10)->offset, 0u);
}

}  // namespace
}  // namespace headrace::staging
