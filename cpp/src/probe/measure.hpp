// Private to the probe: measuring one grid point with threads x queue depth reads in flight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "headrace/probe/config.hpp"
#include "headrace/probe/io_path.hpp"
#include "headrace/probe/point.hpp"

namespace headrace::probe::detail {

// When a point stops starting reads: after exact_bytes (when > 0), else on the clock.
struct StopRule {
  double seconds = 0.0;
  std::uint64_t min_bytes = 0;
  double max_seconds = 0.0;
  std::uint64_t exact_bytes = 0;
};

struct PointWork {
  std::string file;
  std::uint64_t file_size_bytes = 0;
  GridPoint grid;
  IoPath io_path;
  StopRule stop;
  std::uint64_t sequential_start_bytes = 0;  // where thread 0's region begins (sequential)
  std::uint64_t seed = 0;                    // of the random offsets
  std::byte* buffers = nullptr;              // 4 KiB-aligned, buffer_bytes_needed(grid, limit) bytes
  std::uint64_t buffer_limit_bytes = 0;
};

// Destination buffers of one thread: one per read in flight, fewer when the limit says so.
[[nodiscard]] unsigned buffers_per_thread(const GridPoint& grid, std::uint64_t buffer_limit_bytes) noexcept;
// Destination memory of a point, all threads.
[[nodiscard]] std::uint64_t buffer_bytes_needed(const GridPoint& grid, std::uint64_t buffer_limit_bytes) noexcept;

// Runs the point: each thread opens its own backend, keeps queue_depth reads in flight, and counts
// whole blocks. Rethrows the first error of any thread once all of them have stopped.
[[nodiscard]] ProbePoint measure_point(const PointWork& work);

}  // namespace headrace::probe::detail
