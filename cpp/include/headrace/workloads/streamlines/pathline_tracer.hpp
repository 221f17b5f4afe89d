// Pathlines of a time series of flow fields (issue 40): each seed a particle carried through space and time
// from its release to the time traced to, the velocity trilinear in space and linear in time between the
// two frames that bracket it (pathline_math.hpp). The intervals between frames run in order, forward or
// backward in time; in each, every path steps on its own GPU thread (resident_paths.hpp) through the
// resident cache: whole frames when it holds two or more (the next ones loading while the paths step
// between the two before them), else the units the paths ask for in rounds, as the streamline tracer's.
// With no device the same rounds run on CPU threads over host memory: the reference the GPU is checked
// against, bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "headrace/detail/host_array.hpp"
#include "headrace/io/backend.hpp"
#include "headrace/workloads/streamlines/line_stepper.hpp"
#include "headrace/workloads/streamlines/trace_container.hpp"

namespace headrace::workloads::streamlines {

struct PathlineOptions {
  // integrator, step_size (the series' time units), max_steps, tolerance and step bounds (rk45); the
  // direction in time is t0 to t1's (direction is not read)
  TraceOptions trace;
  std::optional<double> t0, t1;  // default: the first frame's time, the last's
  int device = -1;               // -1: host memory and CPU threads
  unsigned threads = 0;          // host: 0 one per core
  std::uint64_t cache_bytes = std::uint64_t{1} << 30;
  std::uint32_t unit_pages = 96;  // Hilbert layout: pages a cache unit holds when whole frames do not fit
  std::optional<io::BackendKind> backend;
  // Told the intervals done and their count after each; false stops the run: paths not ended end "stopped".
  std::function<bool(std::uint64_t done, std::uint64_t intervals)> progress;
};

// Every path in one array: path i is points[offsets[i], offsets[i + 1]), its seed's point first.
struct Pathlines {
  headrace::detail::HostArray<Vec3> points, velocities;  // the flow's velocity at each point at its time
  headrace::detail::HostArray<double> times;             // each point's time in the series
  std::vector<std::int64_t> offsets{0};
  std::vector<Termination> ends;          // end_time, left_domain (at its last point inside), max_steps, stopped
  std::vector<double> seed_times;         // each path's release
};

struct PathlineStats {
  ResidentStats resident;
  double t0 = 0, t1 = 0;
  std::uint64_t intervals = 0;      // frame intervals stepped through
  std::uint64_t frames_loaded = 0;  // whole frames read (whole_frames), or 0
  bool whole_frames = false;        // the cache held whole frames; else units in rounds
  double home_seconds = 0;          // of resident.collect_seconds: the points' copy home from the GPU
  std::uint32_t point_capacity = 0; // the points kept a path: max_steps + 1, or fewer where the step bounds them
  double fault_seconds = 0;         // the result's pages mapped ahead of the points (RK4), beside the tracer's work
};

struct PathlineRun {
  Pathlines lines;
  PathlineStats stats;
  double seconds = 0;  // from the tracer's making to the paths on the host
  std::string layout;  // "blocks" or "hilbert"
  std::uint64_t unit_bytes = 0;
};

// Paths of `seeds` released at `seed_times` (empty: each at t0) through the series in `path`. UsageError,
// naming the file (and the offset where one applies), for fewer than 2 frames, frame times that do not
// increase, a frame without velocity or whose velocity differs in shape from frame 0's, compressed
// velocity where whole frames do not fit the cache (units are read as stored), t0 or t1 outside the
// frames' times or equal, a seed outside the grid or released outside
// [t0, t1], a cache too small for 8 units of each of two frames, and a non-positive step; UnavailableError
// without a GPU or its kernels; the queue's error for a chunk that could not be read.
[[nodiscard]] PathlineRun trace_pathlines(const std::string& path, const std::vector<Vec3>& seeds,
                                          const std::vector<double>& seed_times, const PathlineOptions& options);

}  // namespace headrace::workloads::streamlines
