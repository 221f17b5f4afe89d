// Neighbouring copies merge into one run, copies of one size at a constant stride into the rows of one
// 2D copy; anything that breaks the pattern (another size, another stride, a copy that goes back)
// starts a new run, and order is kept.
#include "headrace/gpu/host_to_device_copies.hpp"

#include <gtest/gtest.h>

namespace headrace::gpu {
namespace {

TEST(HostToDeviceCopies, NeighboursOnBothSidesMergeIntoOneRun) {
  std::byte staging[16384];
  HostToDeviceCopies copies;
  copies.add(0x10000, staging, 4096);
  copies.add(0x11000, staging + 4096, 4096);
  copies.add(0x12000, staging + 8192, 100);
  ASSERT_EQ(copies.runs().size(), 1u);
  EXPECT_EQ(copies.runs()[0].destination, 0x10000u);
  EXPECT_EQ(copies.runs()[0].source, staging);
  EXPECT_EQ(copies.runs()[0].size, 8192u + 100);
}

TEST(HostToDeviceCopies, PaddedChunksIntoABackToBackSegmentBecomeTheRowsOfOneCopy) {
  std::byte file[4 * 4096];
  HostToDeviceCopies copies;
  for (int k = 0; k < 4; ++k) copies.add(0x10000 + k * 4000, file + k * 4096, 4000);  // pages of 4000 bytes
  ASSERT_EQ(copies.runs().size(), 1u);
  const auto& grid = copies.runs()[0];
  EXPECT_EQ(grid.rows, 4u);
  EXPECT_EQ(grid.size, 4000u);
  EXPECT_EQ(grid.source, file);
  EXPECT_EQ(grid.source_pitch, 4096u);
  EXPECT_EQ(grid.destination, 0x10000u);
  EXPECT_EQ(grid.destination_pitch, 4000u);
}

TEST(HostToDeviceCopies, AnotherSizeOrStrideStartsANewRun) {
  std::byte staging[16384];
  HostToDeviceCopies copies;
  copies.add(0x10000, staging, 4096);
  copies.add(0x11000, staging + 8192, 4096);  // the source skips: two rows
  copies.add(0x12000, staging + 12288, 4096); // the source's stride changes
  copies.add(0x13000, staging + 16000, 10);   // another size
  copies.add(0x10000, staging, 0);            // nothing to copy: ignored
  copies.add(0x12000, staging, 10);           // the destination goes back
  ASSERT_EQ(copies.runs().size(), 4u);
  EXPECT_EQ(copies.runs()[0].rows, 2u);
  EXPECT_EQ(copies.runs()[0].source_pitch, 8192u);
  EXPECT_EQ(copies.runs()[0].destination_pitch, 4096u);
  EXPECT_EQ(copies.runs()[1].source, staging + 12288);
  EXPECT_EQ(copies.runs()[1].rows, 1u);
  EXPECT_EQ(copies.runs()[2].destination, 0x13000u);
  EXPECT_EQ(copies.runs()[3].size, 10u);
  EXPECT_EQ(copies.runs()[3].rows, 1u);
}

TEST(HostToDeviceCopies, RowsOverlappingOrTooFarApartStaySeparate) {
  std::byte staging[8192];
  HostToDeviceCopies copies;
  copies.add(0x10000, staging, 4096);
  copies.add(0x10800, staging + 4096, 4096);  // the destination rows would overlap
  ASSERT_EQ(copies.runs().size(), 2u);
  HostToDeviceCopies far;
  far.add(0x10000, staging, 100);
  far.add(0x10000 + (std::uint64_t{1} << 31), staging + 100, 100);  // a pitch above cuMemcpy2D's limit
  EXPECT_EQ(far.runs().size(), 2u);
}

}  // namespace
}  // namespace headrace::gpu
