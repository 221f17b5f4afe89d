// One measured point of the probe grid, and the device ceiling picked from them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "headrace/probe/config.hpp"
#include "headrace/probe/io_path.hpp"

namespace headrace::probe {

struct ProbePoint {
  Pattern pattern = Pattern::sequential;
  std::uint64_t block_size_bytes = 0;
  unsigned queue_depth = 0;
  unsigned threads = 0;
  std::uint64_t bytes = 0;   // bytes read, all threads; always reads * block_size_bytes
  std::uint64_t reads = 0;   // completed block-sized reads
  double seconds = 0.0;      // from the first submission to the last completion
  double gigabytes_per_second = 0.0;  // bytes / seconds / 1e9
  double iops = 0.0;                  // reads / seconds
  IoPath io_path;
};

// Fills gigabytes_per_second and iops from bytes, reads and seconds.
void derive_rates(ProbePoint& point) noexcept;

// The device ceiling: the index of the sequential point with the highest GB/s (the first one on a
// tie), or nullopt when there is no sequential point.
[[nodiscard]] std::optional<std::size_t> find_ceiling(const std::vector<ProbePoint>& points) noexcept;

}  // namespace headrace::probe
