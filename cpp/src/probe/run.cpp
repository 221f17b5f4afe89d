#include "headrace/probe/run.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "headrace/detail/aligned_buffer.hpp"
#include "headrace/error.hpp"
#include "headrace/probe/io_path.hpp"
#include "headrace/probe/test_file.hpp"
#include "measure.hpp"
#include "splitmix.hpp"

namespace headrace::probe {
namespace {

// Every thread needs a region of at least one block.
void expect_file_fits_grid(const TestFile& file, const std::vector<GridPoint>& grid) {
  for (const auto& point : grid) {
    const std::uint64_t needed = std::uint64_t{point.threads} * point.block_size_bytes;
    HEADRACE_EXPECT(file.size_bytes >= needed, UsageError,
                    "probe: " + file.path + " has " + std::to_string(file.size_bytes) + " bytes; " +
                        std::to_string(point.threads) + " threads of " + std::to_string(point.block_size_bytes) +
                        "-byte blocks need at least " + std::to_string(needed));
  }
}

// One allocation for every point, touched once so that page faults stay off the clock.
headrace::detail::AlignedBuffer allocate_buffers(const std::vector<GridPoint>& grid, std::uint64_t buffer_limit_bytes) {
  std::uint64_t largest = 0;
  for (const auto& point : grid) largest = std::max(largest, detail::buffer_bytes_needed(point, buffer_limit_bytes));
  headrace::detail::AlignedBuffer buffers(largest);
  std::memset(buffers.data(), 0, buffers.size_bytes());
  return buffers;
}

}  // namespace

std::vector<ProbePoint> run_probe(const ProbeConfig& config, const ProgressCallback& progress) {
  config.validate();
  const auto grid = expand_grid(config);
  const TestFile file = prepare_test_file(config.path, config.file_size_bytes, config.seed);
  expect_file_fits_grid(file, grid);
  const IoPath io_path = choose_io_path(file.path, config.strict);
  if (!io_path.o_direct) warm_page_cache(file.path);
  const auto buffers = allocate_buffers(grid, config.buffer_limit_bytes);

  detail::PointWork work;
  work.file = file.path;
  work.file_size_bytes = file.size_bytes;
  work.io_path = io_path;
  work.stop = {config.seconds_per_point, config.min_bytes_per_point, config.max_seconds_per_point,
               config.bytes_per_point};
  work.buffers = buffers.data();
  work.buffer_limit_bytes = config.buffer_limit_bytes;

  detail::SplitMix64 seeds(config.seed);
  std::vector<ProbePoint> points;
  points.reserve(grid.size());
  for (const auto& grid_point : grid) {
    work.grid = grid_point;
    work.seed = seeds.next();
    points.push_back(detail::measure_point(work));
    if (grid_point.pattern == Pattern::sequential) {
      // The next sequential point starts where each thread of this one stopped.
      work.sequential_start_bytes = (work.sequential_start_bytes + points.back().bytes / grid_point.threads) %
                                    file.size_bytes;
    }
    if (progress && !progress(points.size(), grid.size(), points.back())) break;
  }
  return points;
}

}  // namespace headrace::probe
