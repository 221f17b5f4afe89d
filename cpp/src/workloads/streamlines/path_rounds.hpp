// The pathline tracer's rounds (pathline_tracer.cpp): the paths, their points and the cache's pool in host
// memory on CPU threads (the reference) or in GPU memory (resident_rounds.cu's kernels), one path a thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "headrace/workloads/streamlines/pathline_tracer.hpp"
#include "headrace/workloads/streamlines/resident_paths.hpp"
#include "round_runner.hpp"

namespace headrace::workloads::streamlines::resident {

template <typename Units>
class PathRunner : public SlotPool {
 public:
  // One round over the window of `state` in `interval`; fills state.wanted and state.last_used.
  virtual PathCounters run(RoundState& state, const PathInterval& interval) = 0;
  // The paths after the last round, and their points placed in `out` (points, velocities and times; the
  // rest is the caller's) by `place`, whose points, offsets and outputs the runner sets. Returns the seconds
  // the points took to come home from the GPU (0 on the host).
  virtual double collect(PathPlaceParams place, std::vector<PathLine>& lines, Pathlines& out) = 0;
};

// The parameters every round of a runner shares (pointers the runner's to set): `units` one frame's,
// unit u of frame f at f * units_per_frame + u.
template <typename Units>
PathRoundParams<Units> path_round_params(const Units& units, std::uint64_t units_per_frame, const TraceOptions& options,
                                         std::uint64_t unit_bytes) {
  PathRoundParams<Units> params;
  params.units = units;
  params.units_per_frame = units_per_frame;
  params.options = options;
  params.cache.unit_floats = unit_bytes / sizeof(float);
  params.point_capacity = options.max_steps + 1;
  return params;
}

// The shared parameters for the round and window of `state` in `interval`.
template <typename Units>
PathRoundParams<Units> path_window_of(PathRoundParams<Units> params, const RoundState& state, const PathInterval& interval) {
  params.cache.round = state.round;
  params.first_line = state.first_line;
  params.line_count = state.window;
  params.interval = interval;
  return params;
}

// Where each path's points begin among all, and their total last; `out`'s points, velocities and times sized
// for them all (not written: collect places every one).
inline std::vector<std::uint64_t> sized_for(const std::vector<PathLine>& lines, Pathlines& out) {
  std::vector<std::uint64_t> offsets(lines.size() + 1, 0);
  for (std::size_t i = 0; i < lines.size(); ++i) offsets[i + 1] = offsets[i] + lines[i].points;
  out.points.resize(offsets.back());
  out.velocities.resize(offsets.back());
  out.times.resize(offsets.back());
  return offsets;
}

// A runner over `slots` units of unit_bytes (unit_count in the series): host memory on `threads` CPU
// threads (0: one per core), or device memory on that GPU.
template <typename Units>
[[nodiscard]] std::unique_ptr<PathRunner<Units>> make_host_paths(const Units& units, std::uint64_t units_per_frame,
                                                                 const TraceOptions& options, std::uint64_t unit_bytes,
                                                                 std::uint64_t slots, std::vector<PathLine> lines, unsigned threads);
template <typename Units>
[[nodiscard]] std::unique_ptr<PathRunner<Units>> make_device_paths(int device, const Units& units, std::uint64_t units_per_frame,
                                                                   const TraceOptions& options, std::uint64_t unit_bytes,
                                                                   std::uint64_t slots, std::uint64_t unit_count,
                                                                   const std::vector<PathLine>& lines);

}  // namespace headrace::workloads::streamlines::resident
