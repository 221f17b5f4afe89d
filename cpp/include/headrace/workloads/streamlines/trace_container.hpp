// Streamlines of a flow-field container, one call: the layout (native blocks or Hilbert) read from the
// file, the data manager chosen (user-managed block cache, kernel-managed mmap, or the GPU tracer's
// resident cache), every seed traced, and the run's statistics (seed 002's four implementations, and
// the GPU tracer of issue 5).
#pragma once

#include <future>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "headrace/detail/enum_names.hpp"
#include "headrace/io/backend.hpp"
#include "headrace/workloads/streamlines/block_cache.hpp"
#include "headrace/workloads/streamlines/mapped_units.hpp"
#include "headrace/workloads/streamlines/tracer.hpp"

namespace headrace::workloads::streamlines {

// resident: the GPU tracer (resident_tracer.hpp): units streamed by the engine's queue into a cache in
// GPU memory, one GPU thread per half-line; with no device, the same rounds on CPU threads over host
// memory (the reference the GPU is checked against).
enum class DataManager : std::uint8_t { user, mmap, resident };
inline constexpr headrace::detail::EnumNames<DataManager, 3> data_manager_names{
    {{DataManager::user, "user"}, {DataManager::mmap, "mmap"}, {DataManager::resident, "resident"}}};

// What the resident cache did over a run.
struct ResidentStats {
  std::uint64_t rounds = 0;        // launches: each ends when every unfinished line waits for a unit
  std::uint64_t slots = 0;         // units the cache holds
  std::uint64_t units_loaded = 0, evictions = 0, bytes_read = 0;
  double load_seconds = 0;     // reads through the queue, into the cache
  double advance_seconds = 0;  // the rounds' stepping (kernels, or host threads)
  double make_seconds = 0;     // the tracer made: its buffers, kernels and reader
  double collect_seconds = 0;  // the lines' points brought to the host and joined into polylines
};

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
  // resident: cache_bytes and unit_pages as above; the device (-1: host memory and threads), and the
  // backend of the engine's queue that reads the units: none, the engine's read path (a file cached
  // whole is page-locked and copied by DMA, the rest read O_DIRECT), what every other workload uses
  int device = -1;
  std::optional<io::BackendKind> backend;
  // The flow's velocity at every point of the lines, sampled through the cache after the trace in
  // rounds as the lines' (units loaded as the points want them; ContainerTraceRun::velocities).
  bool sample_velocities = false;
  // kernel-managed
  MappedUnitsOptions mapped;
  // Lines ended so far, now and then; false stops the run (tracer.hpp). The resident manager tells it
  // between rounds, and its lines cut short end "stopped" with the points they had.
  TraceProgress progress;
};

// The flow's velocity at every point of a run's lines.
struct SampledVelocities {
  std::vector<Vec3> values;  // per point of lines.points (NaN outside the grid); empty when a cache too small
                             // for the points' cells at once stopped them (sample_flow then reads the file)
  double seconds = 0;        // their sampling, the field's last units read for it included
};

struct ContainerTraceRun {
  Polylines lines;
  double seconds = 0;            // tracing, without opening the file and building the manager
  std::string layout;            // "blocks" or "hilbert"
  std::uint64_t unit_bytes = 0;  // a block, or a Hilbert unit
  BlockCacheStats cache;         // user-managed
  MappedUnitsStats mapped;       // kernel-managed
  ResidentStats resident;        // the GPU tracer
  // resident, sample_velocities: sampled by the tracer on a thread of its own once the lines are home (on
  // a GPU, at the points it kept), so that the caller writes the lines meanwhile; get() waits. Not valid
  // without sample_velocities.
  std::future<SampledVelocities> velocities;
};

[[nodiscard]] constexpr const char* to_string(DataManager manager) noexcept {
  return headrace::detail::name_of(data_manager_names, manager);
}

// Throws UsageError for a container that is not a flow field in blocks or Hilbert layout, and whatever
// a failed read throws.
[[nodiscard]] ContainerTraceRun trace_container(const std::string& path, const std::vector<Vec3>& seeds,
                                                const ContainerTraceOptions& options);

// The velocity at each point into `velocities` (as many), trilinear as the tracers sample it (NaN outside
// the grid): the vectors a line's points carry for colouring (ParaView's stream tracer gives them). Read
// through a mapping.
void sample_flow(const std::string& path, std::span<const Vec3> points, std::span<Vec3> velocities, std::uint32_t frame = 0,
                 unsigned threads = 0);

// Feature-based seeding (seed 002): the interior grid points, every `stride`-th along each axis, where
// the vorticity magnitude |curl v| (central differences) lies in [low, high), x fastest; the file is
// read through a mapping, on `threads` threads.
[[nodiscard]] std::vector<Vec3> feature_seeds(const std::string& path, float low, float high, std::uint32_t stride,
                                              std::uint32_t frame = 0, unsigned threads = 0);

}  // namespace headrace::workloads::streamlines
