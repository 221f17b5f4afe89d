// A tiny real probe: every point reads whole blocks, bytes add up, rates are positive and follow
// from bytes and seconds, the route is reported, and progress is called once per point.
#include <gtest/gtest.h>
#include <sys/statfs.h>
#include <linux/magic.h>

#include <filesystem>

#include "headrace/error.hpp"
#include "headrace/probe/run.hpp"
#include "support/temp_directory.hpp"

namespace headrace::probe {
namespace {

constexpr std::uint64_t KiB = 1024;
constexpr std::uint64_t MiB = 1024 * KiB;

ProbeConfig tiny_config(const std::string& path) {
  ProbeConfig config = quick_config(path);
  config.file_size_bytes = 8 * MiB;
  config.block_sizes_bytes = {4 * KiB, 64 * KiB};
  config.queue_depths = {1, 4};
  config.thread_counts = {1, 3};
  config.bytes_per_point = 1 * MiB + 1;  // not a multiple of either block: rounds up
  return config;
}

TEST(ProbeRun, ProgressThatSaysStopEndsTheProbeWithThePointsMeasured) {
  testing::TempDirectory directory;
  const auto points = run_probe(tiny_config(directory.path().string()),
                                [](std::size_t done, std::size_t, const ProbePoint&) { return done < 3; });
  EXPECT_EQ(points.size(), 3u);
}

TEST(ProbeRun, ExactBytesPerPointAddUpAndRatesArePositive) {
  testing::TempDirectory directory;
  const auto config = tiny_config(directory.path().string());
  std::vector<std::size_t> progress_calls;
  const auto points = run_probe(config, [&](std::size_t done, std::size_t total, const ProbePoint& point) {
    EXPECT_EQ(total, 16u);
    EXPECT_GT(point.bytes, 0u);
    progress_calls.push_back(done);
    return true;
  });
  ASSERT_EQ(points.size(), 16u);
  EXPECT_EQ(progress_calls, (std::vector<std::size_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}));

  const auto grid = expand_grid(config);
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    SCOPED_TRACE("point " + std::to_string(i));
    EXPECT_EQ(p.pattern, grid[i].pattern);
    EXPECT_EQ(p.block_size_bytes, grid[i].block_size_bytes);
    EXPECT_EQ(p.queue_depth, grid[i].queue_depth);
    EXPECT_EQ(p.threads, grid[i].threads);
    const std::uint64_t blocks = (config.bytes_per_point + p.block_size_bytes - 1) / p.block_size_bytes;
    EXPECT_EQ(p.reads, blocks);
    EXPECT_EQ(p.bytes, blocks * p.block_size_bytes);
    EXPECT_GT(p.seconds, 0.0);
    EXPECT_GT(p.gigabytes_per_second, 0.0);
    EXPECT_DOUBLE_EQ(p.gigabytes_per_second, static_cast<double>(p.bytes) / p.seconds / 1e9);
    EXPECT_DOUBLE_EQ(p.iops, static_cast<double>(p.reads) / p.seconds);
    EXPECT_EQ(p.io_path.describe(), points.front().io_path.describe());
    if (!p.io_path.o_direct) EXPECT_EQ(p.io_path.cache_state, CacheState::hot);
    if (p.io_path.cache_state == CacheState::hot) EXPECT_FALSE(p.io_path.note.empty()) << "hot without a reason";
  }
  const auto ceiling = find_ceiling(points);
  ASSERT_TRUE(ceiling.has_value());
  EXPECT_EQ(points[*ceiling].pattern, Pattern::sequential);
}

TEST(ProbeRun, TimedPointsReadForAboutTheirTimeBudget) {
  testing::TempDirectory directory;
  auto config = tiny_config(directory.path().string());
  config.bytes_per_point = 0;
  config.block_sizes_bytes = {64 * KiB};
  config.queue_depths = {4};
  config.thread_counts = {2};
  config.seconds_per_point = 0.05;
  config.min_bytes_per_point = 0;
  config.max_seconds_per_point = 0.05;
  const auto points = run_probe(config);
  ASSERT_EQ(points.size(), 2u);
  for (const auto& p : points) {
    EXPECT_GE(p.seconds, 0.05);
    EXPECT_LT(p.seconds, 1.0);
    EXPECT_GT(p.reads, 0u);
    EXPECT_EQ(p.bytes, p.reads * 64 * KiB);
  }
}

TEST(ProbeRun, MoreReadsInFlightThanBuffersStillCountsEveryRead) {
  testing::TempDirectory directory;
  auto config = tiny_config(directory.path().string());
  config.block_sizes_bytes = {64 * KiB};
  config.queue_depths = {8};
  config.thread_counts = {2};
  config.buffer_limit_bytes = 128 * KiB;  // one buffer per thread for eight reads in flight
  const auto points = run_probe(config);
  for (const auto& p : points) EXPECT_EQ(p.bytes, 17 * 64 * KiB);
}

TEST(ProbeRun, FewerReadsThanThreadsLeavesSomeThreadsIdle) {
  testing::TempDirectory directory;
  auto config = tiny_config(directory.path().string());
  config.block_sizes_bytes = {64 * KiB};
  config.queue_depths = {4};
  config.thread_counts = {3};
  config.bytes_per_point = 100 * KiB;  // two reads for three threads
  const auto points = run_probe(config);
  ASSERT_EQ(points.size(), 2u);
  for (const auto& p : points) EXPECT_EQ(p.reads, 2u);
}

TEST(ProbeRun, FileTooSmallForTheGridIsAUsageErrorNamingTheNeed) {
  testing::TempDirectory directory;
  auto config = tiny_config(directory.file("small.bin"));
  config.file_size_bytes = 64 * KiB;
  try {
    (void)run_probe(config);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("3 threads of 65536-byte blocks need at least 196608"), std::string::npos)
        << error.what();
  }
}

// On tmpfs nothing can be cold: the points say hot and why, and strict refuses.
TEST(ProbeRun, FileInRamIsReportedHotAndStrictRefusesIt) {
  struct statfs info {};
  if (::statfs("/dev/shm", &info) != 0 || static_cast<unsigned long>(info.f_type) != TMPFS_MAGIC) {
    GTEST_SKIP() << "/dev/shm is not a tmpfs on this machine";
  }
  const std::string path = "/dev/shm/headrace-probe-test-" + std::to_string(::getpid()) + ".bin";
  struct Remove {
    std::string path;
    ~Remove() { std::filesystem::remove(path); }
  } remove{path};
  auto config = tiny_config(path);
  config.block_sizes_bytes = {64 * KiB};
  config.queue_depths = {4};
  config.thread_counts = {1};
  const auto points = run_probe(config);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].io_path.cache_state, CacheState::hot);
  EXPECT_NE(points[0].io_path.note.find("tmpfs"), std::string::npos) << points[0].io_path.note;

  config.strict = true;
  try {
    (void)run_probe(config);
    ADD_FAILURE() << "strict accepted a file in RAM";
  } catch (const UnavailableError& error) {
    EXPECT_NE(std::string(error.what()).find("tmpfs"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace headrace::probe
