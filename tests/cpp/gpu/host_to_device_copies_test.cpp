// Neighbouring copies merge into one run; anything that breaks the run (a gap on either side, a copy
// that goes back) starts a new one, and order is kept.
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

TEST(HostToDeviceCopies, AGapOnEitherSideStartsANewRun) {
  std::byte staging[16384];
  HostToDeviceCopies copies;
  copies.add(0x10000, staging, 4096);
  copies.add(0x11000, staging + 8192, 4096);  // the source skips
  copies.add(0x13000, staging + 12288, 10);   // the destination skips
  copies.add(0x10000, staging, 0);            // nothing to copy: ignored
  copies.add(0x20000, staging + 12298, 10);   // the destination jumps
  ASSERT_EQ(copies.runs().size(), 4u);
  EXPECT_EQ(copies.runs()[1].source, staging + 8192);
  EXPECT_EQ(copies.runs()[2].destination, 0x13000u);
  EXPECT_EQ(copies.runs()[3].size, 10u);
}

}  // namespace
}  // namespace headrace::gpu
