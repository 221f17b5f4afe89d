// How sort-last compositing shares an image: direct send's bands and binary swap's runs each cover every
// pixel exactly once, whatever the ranks and the image's size; and the depth merge keeps the nearer key.
#include "headrace/workloads/common/image_bands.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "headrace/workloads/particles/sphere_glyphs_shared.hpp"

namespace headrace::workloads::common {
namespace {

// Every pixel of `pixels` covered by exactly one of the runs.
void expect_partition(const std::vector<PixelRun>& runs, std::uint64_t pixels) {
  std::vector<int> covered(pixels, 0);
  for (const PixelRun& run : runs) {
    ASSERT_LE(run.first + run.count, pixels);
    for (std::uint64_t p = run.first; p < run.first + run.count; ++p) ++covered[p];
  }
  for (std::uint64_t p = 0; p < pixels; ++p) ASSERT_EQ(covered[p], 1) << "pixel " << p;
}

TEST(ImageBands, DirectSendBandsAreWholeRowsCoveringTheImageOnce) {
  for (int ranks : {1, 2, 3, 4, 7, 8}) {
    for (auto [width, height] : {std::pair{16, 9}, std::pair{5, 3}, std::pair{1, 1}, std::pair{1024, 768}}) {
      std::vector<PixelRun> bands;
      for (int rank = 0; rank < ranks; ++rank) {
        bands.push_back(direct_send_band(rank, ranks, width, height));
        EXPECT_EQ(bands.back().first % width, 0u);
        EXPECT_EQ(bands.back().count % width, 0u);
      }
      expect_partition(bands, static_cast<std::uint64_t>(width) * height);
      EXPECT_EQ(bands[0].count, static_cast<std::uint64_t>((height + ranks - 1) / ranks) * width);  // the widest: the stride
    }
  }
}

TEST(ImageBands, BinarySwapHalvesTheRunAndEndsWithRunsCoveringTheImageOnce) {
  for (int ranks : {1, 2, 4, 8, 16}) {
    for (std::uint64_t pixels : {1ull, 7ull, 100ull, 786432ull}) {
      std::vector<PixelRun> runs;
      for (int rank = 0; rank < ranks; ++rank) runs.push_back(binary_swap_final(rank, ranks, pixels));
      expect_partition(runs, pixels);
    }
  }
  // In a round, what a rank keeps is what its partner gives away, and the other way round.
  const PixelRun whole{0, 101};
  EXPECT_EQ(binary_swap_kept(whole, 0, 0).count + binary_swap_kept(whole, 1, 0).count, 101u);
  EXPECT_EQ(binary_swap_kept(whole, 1, 0).first, binary_swap_kept(whole, 0, 0).count);
  EXPECT_TRUE(is_power_of_two(8) && !is_power_of_two(6) && !is_power_of_two(0));
}

TEST(ImageBands, DepthMergeKeepsTheNearerKeyAndItsColour) {
  std::uint64_t key = particles::empty_key;
  std::uint32_t colour = 0xff000000u;  // the background where nothing was drawn
  particles::depth_merge(key, colour, particles::empty_key, 0xff000000u);
  EXPECT_EQ(key, particles::empty_key);
  particles::depth_merge(key, colour, particles::depth_key(2.0f, 7), 0xff0000ffu);
  particles::depth_merge(key, colour, particles::depth_key(3.0f, 1), 0xff00ff00u);  // farther: ignored
  EXPECT_EQ(key, particles::depth_key(2.0f, 7));
  EXPECT_EQ(colour, 0xff0000ffu);
}

}  // namespace
}  // namespace headrace::workloads::common
