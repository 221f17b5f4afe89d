// Neighbouring copies merge into one run, copies of one size at a constant stride into the rows of one
// 2D copy; anything that breaks the pattern (another size, another stride, a copy that goes back)
// starts a new run, and order is kept.
#include "headrace/staging/host_to_device_copies.hpp"

#include <gtest/gtest.h>

namespace headrace::staging {
namespace {

// One device allocation spans every address of these tests unless a test says otherwise.
HostToDeviceCopies one_allocation() {
  return HostToDeviceCopies([](gpu::CUdeviceptr) { return gpu::CUdeviceptr{1} << 40; });
}

TEST(HostToDeviceCopies, NeighboursOnBothSidesMergeIntoOneRun) {
  std::byte staging[16384];
  HostToDeviceCopies copies = one_allocation();
  copies.add(0x10000, staging, 4096, std::end(staging));
  copies.add(0x11000, staging + 4096, 4096, std::end(staging));
  copies.add(0x12000, staging + 8192, 100, std::end(staging));
  ASSERT_EQ(copies.runs().size(), 1u);
  EXPECT_EQ(copies.runs()[0].destination, 0x10000u);
  EXPECT_EQ(copies.runs()[0].source, staging);
  EXPECT_EQ(copies.runs()[0].size, 8192u + 100);
}

TEST(HostToDeviceCopies, PaddedChunksIntoABackToBackSegmentBecomeTheRowsOfOneCopy) {
  std::byte file[4 * 4096];
  HostToDeviceCopies copies = one_allocation();
  for (int k = 0; k < 4; ++k) copies.add(0x10000 + k * 4000, file + k * 4096, 4000, std::end(file));  // pages of 4000 bytes
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
  HostToDeviceCopies copies = one_allocation();
  copies.add(0x10000, staging, 4096, std::end(staging));
  copies.add(0x11000, staging + 8192, 4096, std::end(staging));  // the source skips: two rows
  copies.add(0x12000, staging + 12288, 4096, std::end(staging)); // the source's stride changes
  copies.add(0x13000, staging + 16000, 10, std::end(staging));   // another size
  copies.add(0x10000, staging, 0, std::end(staging));            // nothing to copy: ignored
  copies.add(0x12000, staging, 10, std::end(staging));           // the destination goes back
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
  HostToDeviceCopies copies = one_allocation();
  copies.add(0x10000, staging, 4096, std::end(staging));
  copies.add(0x10800, staging + 4096, 4096, std::end(staging));  // the destination rows would overlap
  ASSERT_EQ(copies.runs().size(), 2u);
  HostToDeviceCopies far = one_allocation();
  far.add(0x10000, staging, 100, std::end(staging));
  far.add(0x10000 + (std::uint64_t{1} << 31), staging + 100, 100, std::end(staging));  // a pitch above cuMemcpy2D's limit
  EXPECT_EQ(far.runs().size(), 2u);
}

TEST(HostToDeviceCopies, RowsInTwoAllocationsOrTwoHostBuffersStaySeparate) {
  std::byte staging[8192], other[8192];
  // Two slots of their own: cuMemcpy2D refuses rows in two allocations (CUDA_ERROR_INVALID_VALUE).
  HostToDeviceCopies slots([](gpu::CUdeviceptr address) { return address < 0x20000 ? gpu::CUdeviceptr{0x20000} : gpu::CUdeviceptr{0x40000}; });
  slots.add(0x10000, staging, 4096, std::end(staging));
  slots.add(0x30000, staging + 4096, 4096, std::end(staging));
  EXPECT_EQ(slots.runs().size(), 2u);
  HostToDeviceCopies sources = one_allocation();
  sources.add(0x10000, staging, 4096, std::end(staging));
  sources.add(0x11000, other, 4096, std::end(other));  // contiguous on the GPU, another host buffer
  EXPECT_EQ(sources.runs().size(), 2u);
}

}  // namespace
}  // namespace headrace::staging
