// The probe grid: defaults from the brief, expansion order, validation messages.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "headrace/error.hpp"
#include "headrace/probe/config.hpp"

namespace headrace::probe {
namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

TEST(ProbeConfig, DefaultGridIsFiveBlocksFiveDepthsFourThreadCountsTwoPatterns) {
  const auto config = default_config("/x");
  EXPECT_EQ(config.block_sizes_bytes, (std::vector<std::uint64_t>{4 * KiB, 32 * KiB, 128 * KiB, 1 * MiB, 4 * MiB}));
  EXPECT_EQ(config.queue_depths, (std::vector<unsigned>{1, 4, 16, 32, 64}));
  EXPECT_EQ(config.thread_counts, (std::vector<unsigned>{1, 2, 4, 8}));
  EXPECT_EQ(config.patterns, (std::vector<Pattern>{Pattern::sequential, Pattern::random}));
  EXPECT_EQ(expand_grid(config).size(), 5u * 5u * 4u * 2u);
  EXPECT_NO_THROW(config.validate());
}

TEST(ProbeConfig, QuickGridIsSmallerAndUsesA256MiBFile) {
  const auto config = quick_config("/x");
  EXPECT_EQ(config.block_sizes_bytes, (std::vector<std::uint64_t>{4 * KiB, 128 * KiB, 1 * MiB}));
  EXPECT_EQ(config.queue_depths, (std::vector<unsigned>{1, 16, 32}));
  EXPECT_EQ(config.thread_counts, (std::vector<unsigned>{1, 4}));
  EXPECT_EQ(config.file_size_bytes, 256 * MiB);
  EXPECT_LT(config.seconds_per_point, default_config("/x").seconds_per_point);
  EXPECT_EQ(expand_grid(config).size(), 3u * 3u * 2u * 2u);
  EXPECT_NO_THROW(config.validate());
}

TEST(ProbeConfig, GridHoldsEveryCombinationOnceWithPatternsAlternating) {
  ProbeConfig config = default_config("/x");
  config.block_sizes_bytes = {4 * KiB, 1 * MiB};
  config.queue_depths = {1, 32};
  config.thread_counts = {1, 4, 2};
  const auto grid = expand_grid(config);
  ASSERT_EQ(grid.size(), 2u * 2u * 3u * 2u);

  std::set<std::tuple<Pattern, std::uint64_t, unsigned, unsigned>> seen;
  for (const auto& point : grid) seen.insert({point.pattern, point.block_size_bytes, point.queue_depth, point.threads});
  EXPECT_EQ(seen.size(), grid.size());

  for (std::size_t i = 0; i < grid.size(); ++i) {
    EXPECT_EQ(grid[i].pattern, i % 2 == 0 ? Pattern::sequential : Pattern::random) << "point " << i;
  }
  // Threads outermost, in the order given; then queue depth; then block size.
  EXPECT_EQ(grid.front(), (GridPoint{Pattern::sequential, 4 * KiB, 1, 1}));
  EXPECT_EQ(grid[2], (GridPoint{Pattern::sequential, 1 * MiB, 1, 1}));
  EXPECT_EQ(grid[4], (GridPoint{Pattern::sequential, 4 * KiB, 32, 1}));
  EXPECT_EQ(grid[8], (GridPoint{Pattern::sequential, 4 * KiB, 1, 4}));
  EXPECT_EQ(grid.back(), (GridPoint{Pattern::random, 1 * MiB, 32, 2}));
}

TEST(ProbeConfig, ValidateNamesWhatIsWrong) {
  auto expect_usage_error = [](ProbeConfig config, const std::string& needle) {
    try {
      config.validate();
      ADD_FAILURE() << "no error for " << needle;
    } catch (const UsageError& error) {
      EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
    }
  };
  auto config = quick_config("/x");
  config.block_sizes_bytes = {4 * KiB, 6000};
  expect_usage_error(config, "block size 6000 bytes is not a positive multiple of 4096");
  config = quick_config("/x");
  config.queue_depths = {};
  expect_usage_error(config, "queue_depths is empty");
  config = quick_config("/x");
  config.thread_counts = {2, 2};
  expect_usage_error(config, "thread_counts lists a value twice");
  config = quick_config("/x");
  config.queue_depths = {0};
  expect_usage_error(config, "queue depth 0 is not in 1..4096");
  config = quick_config("/x");
  config.seconds_per_point = 0.0;
  expect_usage_error(config, "seconds_per_point must be > 0");
  config = quick_config("/x");
  config.max_seconds_per_point = config.seconds_per_point / 2;
  expect_usage_error(config, "max_seconds_per_point must be >= seconds_per_point");
  config = quick_config("/x");
  config.buffer_limit_bytes = 4 * KiB;
  expect_usage_error(config, "smaller than the largest block");
  config = quick_config("");
  expect_usage_error(config, "path is empty");
}

TEST(ProbeConfig, PatternNamesRoundTrip) {
  for (auto pattern : {Pattern::sequential, Pattern::random}) EXPECT_EQ(parse_pattern(to_string(pattern)), pattern);
  EXPECT_THROW((void)parse_pattern("rand"), UsageError);
}

}  // namespace
}  // namespace headrace::probe
