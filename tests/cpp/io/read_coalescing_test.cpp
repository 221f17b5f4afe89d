// Joining reads: neighbours in the file and in memory become one read, gaps of padding included;
// anything else (a caller's buffer, a jump, a read past the end, the size limit) stays apart.
#include "headrace/io/read_coalescing.hpp"

#include <gtest/gtest.h>

#include <array>

#include "headrace/error.hpp"

namespace headrace::io {
namespace {

std::array<std::byte, 1 << 16> memory{};

ReadRequest at(std::uint64_t file_offset, std::uint64_t size, std::size_t memory_offset) {
  return {file_offset, size, memory.data() + memory_offset};
}

TEST(ReadCoalescing, PaddedNeighboursBecomeOneRead) {
  // Three chunks of 3000 bytes at 4 KiB-aligned offsets, staged at the same distances.
  const std::vector<ReadRequest> requests = {at(8192, 3000, 0), at(12288, 3000, 4096), at(16384, 3000, 8192)};
  const auto joined = coalesce_reads(requests, {true, true, true}, {.file_size = 1 << 20});
  ASSERT_EQ(joined.reads.size(), 1u);
  EXPECT_EQ(joined.reads[0].file_offset, 8192u);
  EXPECT_EQ(joined.reads[0].size_bytes, 16384u + 3000u - 8192u);  // ends at the last chunk's end
  EXPECT_EQ(joined.reads[0].destination, memory.data());
  const std::vector<std::pair<std::size_t, std::uint64_t>> carried = {{0, 0}, {0, 4096}, {0, 8192}};
  EXPECT_EQ(joined.carried_by, carried);
}

TEST(ReadCoalescing, KeepsApartWhatMustNotBeJoined) {
  const CoalescingLimits limits{.file_size = 20000, .max_gap_bytes = 4096, .max_read_bytes = 12288};
  const std::vector<ReadRequest> requests = {
      at(0, 4096, 0),
      at(4096, 4096, 4096),      // joins
      at(8192, 4096, 12288),     // memory jumps ahead of the file: apart
      at(12288, 4096, 16384),    // joins the one before
      at(16384, 4096, 20480),    // would pass 12288 bytes in one read: apart
      at(28672, 1000, 32768),    // a gap of more than 4096 bytes: apart (and past the end of the file)
      at(29672, 1000, 33768),    // past the end of the file: never joined
      at(40000, 100, 40000),     // not joinable (a caller's buffer)
      at(40100, 100, 40100),     // not joinable
  };
  const auto joined =
      coalesce_reads(requests, {true, true, true, true, true, true, true, false, false}, limits);
  ASSERT_EQ(joined.reads.size(), 7u);
  EXPECT_EQ(joined.reads[0].size_bytes, 8192u);
  EXPECT_EQ(joined.reads[1].size_bytes, 8192u);
  EXPECT_EQ(joined.reads[2].file_offset, 16384u);
  const std::vector<std::pair<std::size_t, std::uint64_t>> carried = {{0, 0}, {0, 4096}, {1, 0}, {1, 4096}, {2, 0},
                                                                       {3, 0}, {4, 0},    {5, 0}, {6, 0}};
  EXPECT_EQ(joined.carried_by, carried);
}

TEST(ReadCoalescing, NeedsAFlagPerRequest) {
  EXPECT_THROW((void)coalesce_reads({at(0, 1, 0)}, {}, {.file_size = 1}), UsageError);
}

}  // namespace
}  // namespace headrace::io
