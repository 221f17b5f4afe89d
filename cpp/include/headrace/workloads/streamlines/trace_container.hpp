// Streamlines of a flow-field container, one call: the layout (native blocks or Hilbert) read from the
// file, the data manager chosen (user-managed block cache, or kernel-managed mmap), every seed traced
// on `threads` threads, and the run's statistics (seed 002's four implementations).
#pragma once

#include <string>
#include <vector>

#include "headrace/workloads/streamlines/block_cache.hpp"
#include "headrace/workloads/streamlines/mapped_units.hpp"
#include "headrace/workloads/streamlines/tracer.hpp"

namespace headrace::workloads::streamlines {

enum class DataManager : std::uint8_t { user, mmap };

struct ContainerTraceOptions {
  TraceOptions trace;
  DataManager manager = DataManager::user;
  std::uint32_t frame = 0;
  unsigned threads = 0;  // 0: one per core
  // user-managed
  std::uint64_t cache_bytes = std::uint64_t{1} << 30;
  unsigned banks = 1;
  bool direct_io = false;         // O_DIRECT reads (the direct backend) instead of the page cache (posix)
  std::uint32_t unit_pages = 96;  // Hilbert: pages a cache unit holds (a multiple of 3; seed 002's best)
  // kernel-managed
  MappedUnitsOptions mapped;
};

struct ContainerTraceRun {
  Polylines lines;
  double seconds = 0;            // tracing, without opening the file and building the manager
  std::string layout;            // "blocks" or "hilbert"
  std::uint64_t unit_bytes = 0;  // a block, or a Hilbert unit
  BlockCacheStats cache;         // user-managed
  MappedUnitsStats mapped;       // kernel-managed
};

[[nodiscard]] const char* to_string(DataManager manager) noexcept;

// Throws UsageError for a container that is not a flow field in blocks or Hilbert layout, and whatever
// a failed read throws.
[[nodiscard]] ContainerTraceRun trace_container(const std::string& path, const std::vector<Vec3>& seeds,
                                                const ContainerTraceOptions& options);

// Feature-based seeding (seed 002): the interior grid points, every `stride`-th along each axis, where
// the vorticity magnitude |curl v| (central differences) lies in [low, high), x fastest; the file is
// read through a mapping, on `threads` threads.
[[nodiscard]] std::vector<Vec3> feature_seeds(const std::string& path, float low, float high, std::uint32_t stride,
                                              std::uint32_t frame = 0, unsigned threads = 0);

}  // namespace headrace::workloads::streamlines
