#include "headrace/probe/config.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "headrace/error.hpp"

namespace headrace::probe {
namespace {

constexpr std::uint64_t kKiB = std::uint64_t{1} << 10;
constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kAlignmentBytes = 4096;  // O_DIRECT and Settings::task_size_bytes

template <typename T>
void expect_values(const std::vector<T>& values, const char* name) {
  HEADRACE_EXPECT(!values.empty(), UsageError, std::string("probe: ") + name + " is empty");
  auto sorted = values;
  std::sort(sorted.begin(), sorted.end());
  HEADRACE_EXPECT(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(), UsageError,
                  std::string("probe: ") + name + " lists a value twice");
}

}  // namespace

void ProbeConfig::validate() const {
  HEADRACE_EXPECT(!path.empty(), UsageError, "probe: path is empty");
  HEADRACE_EXPECT(file_size_bytes > 0, UsageError, "probe: file_size_bytes must be > 0");
  expect_values(patterns, "patterns");
  expect_values(block_sizes_bytes, "block_sizes_bytes");
  expect_values(queue_depths, "queue_depths");
  expect_values(thread_counts, "thread_counts");
  for (auto block : block_sizes_bytes) {
    HEADRACE_EXPECT(block >= kAlignmentBytes && block % kAlignmentBytes == 0, UsageError,
                    "probe: block size " + std::to_string(block) + " bytes is not a positive multiple of 4096");
  }
  for (auto depth : queue_depths) {
    HEADRACE_EXPECT(depth >= 1 && depth <= 4096, UsageError,
                    "probe: queue depth " + std::to_string(depth) + " is not in 1..4096");
  }
  for (auto threads : thread_counts) {
    HEADRACE_EXPECT(threads >= 1 && threads <= 1024, UsageError,
                    "probe: thread count " + std::to_string(threads) + " is not in 1..1024");
  }
  HEADRACE_EXPECT(std::isfinite(seconds_per_point) && seconds_per_point > 0.0, UsageError,
                  "probe: seconds_per_point must be > 0, got " + std::to_string(seconds_per_point));
  HEADRACE_EXPECT(std::isfinite(max_seconds_per_point) && max_seconds_per_point >= seconds_per_point, UsageError,
                  "probe: max_seconds_per_point must be >= seconds_per_point, got " +
                      std::to_string(max_seconds_per_point));
  const auto largest_block = *std::max_element(block_sizes_bytes.begin(), block_sizes_bytes.end());
  HEADRACE_EXPECT(buffer_limit_bytes >= largest_block, UsageError,
                  "probe: buffer_limit_bytes " + std::to_string(buffer_limit_bytes) +
                      " is smaller than the largest block, " + std::to_string(largest_block) + " bytes");
}

ProbeConfig default_config(std::string path) {
  ProbeConfig config;
  config.path = std::move(path);
  return config;
}

ProbeConfig quick_config(std::string path) {
  ProbeConfig config;
  config.path = std::move(path);
  config.file_size_bytes = 256 * kMiB;
  config.block_sizes_bytes = {4 * kKiB, 128 * kKiB, 1 * kMiB};
  config.queue_depths = {1, 16, 32};
  config.thread_counts = {1, 4};
  config.seconds_per_point = 0.1;
  config.min_bytes_per_point = 8 * kMiB;
  config.max_seconds_per_point = 1.0;
  return config;
}

std::vector<GridPoint> expand_grid(const ProbeConfig& config) {
  std::vector<GridPoint> grid;
  grid.reserve(config.thread_counts.size() * config.queue_depths.size() * config.block_sizes_bytes.size() *
               config.patterns.size());
  for (auto threads : config.thread_counts) {
    for (auto depth : config.queue_depths) {
      for (auto block : config.block_sizes_bytes) {
        for (auto pattern : config.patterns) grid.push_back({pattern, block, depth, threads});
      }
    }
  }
  return grid;
}

}  // namespace headrace::probe
