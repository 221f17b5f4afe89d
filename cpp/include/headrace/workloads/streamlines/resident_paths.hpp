// The pathline tracer's round (issue 40): every path of the round's interval steps between the interval's
// two frames through the resident cache (resident_lines.hpp's, its units keyed by frame and unit) until it
// ends, reaches the interval's stop, or needs a unit that is not there: it then counts that unit as wanted
// and waits, unchanged, for the next round. HEADRACE_HD: the CUDA kernel and the host executor (the CPU
// reference) run this very code, one path per thread.
#pragma once

#include <cstdint>

#include "headrace/workloads/streamlines/pathline_math.hpp"
#include "headrace/workloads/streamlines/resident_lines.hpp"

namespace headrace::workloads::streamlines {

// One frame's units among a series': unit u of frame f is cache unit f * units_per_frame + u.
template <typename Units>
struct FrameUnits {
  Units units;
  std::uint64_t first_unit = 0;

  [[nodiscard]] HEADRACE_HD const GridGeometry& geometry() const { return units.geometry(); }
  HEADRACE_HD std::uint64_t unit_of(std::int32_t i, std::int32_t j, std::int32_t k, std::uint64_t& element) const {
    return first_unit + units.unit_of(i, j, k, element);
  }
};

// What a round of paths reports: waiting, the paths of the window that wait for an absent unit.
struct PathCounters {
  unsigned long long steps = 0, ended = 0, waiting = 0;
};

// What a round of paths works on: paths first_line .. first_line + line_count - 1 in `interval`; path i
// keeps its points at points + i * point_capacity (the seed's and one a step).
template <typename Units>
struct PathRoundParams {
  Units units;  // one frame's
  std::uint64_t units_per_frame = 0;
  ResidentUnits cache;
  TraceOptions options;
  PathInterval interval;
  PathLine* lines = nullptr;
  PathPoint* points = nullptr;
  std::uint64_t first_line = 0, line_count = 0;
  std::uint32_t point_capacity = 0;  // options.max_steps + 1
  PathCounters* counters = nullptr;
};

// Runs the k-th path of the round's window.
template <typename Units>
HEADRACE_HD void advance_resident_path(const PathRoundParams<Units>& a, std::uint64_t k) {
  const std::uint64_t i = a.first_line + k;
  PathLine line = a.lines[i];
  if (line.ended) return;
  bool missing = false;
  using Frame = ResidentSampler<FrameUnits<Units>>;
  const std::uint64_t earlier = static_cast<std::uint64_t>(a.interval.index) * a.units_per_frame;
  const BetweenFrames<Frame> sample{Frame{{a.units, earlier}, a.cache, &missing},
                                    Frame{{a.units, earlier + a.units_per_frame}, a.cache, &missing}, a.interval.span};
  PathPoint* out = a.points + i * a.point_capacity;
  const std::uint32_t before = line.points;
  const bool ran = advance_path(sample, line, a.interval, a.options, [&](const PathPoint& point) { out[line.points] = point; },
                                [&] { return missing; });
  a.lines[i] = line;
  if (line.points != before) detail::add(&a.counters->steps, line.points - before);
  if (line.ended) detail::add(&a.counters->ended, 1);
  if (!ran) detail::add(&a.counters->waiting, 1);
}

// Where the paths' points go home: in path order (offsets[i] where path i's begin, offsets[count] their
// total), each split into its position, its velocity and its time in the series. A point's time is its
// interval's earlier frame's time plus tau, or exactly the time it stands on: a frame's (tau 0, or the
// interval's span), t1 (the last interval's stop), its seed's release (a path's first point).
struct PathPlaceParams {
  const PathPoint* points = nullptr;
  std::uint32_t point_capacity = 0;
  const std::uint64_t* offsets = nullptr;
  std::uint64_t count = 0;
  const double* frame_times = nullptr;  // frame_count of them
  std::uint32_t frame_count = 0;
  const double* seed_times = nullptr;  // count of them
  std::uint32_t last_interval = 0;
  float last_stop = 0;
  double t1 = 0;
  Vec3* out_points = nullptr;
  Vec3* out_velocities = nullptr;
  double* out_times = nullptr;
};

HEADRACE_HD inline double path_point_time(const PathPlaceParams& a, const PathPoint& point) {
  const double earlier = a.frame_times[point.interval], later = a.frame_times[point.interval + 1];
  if (point.interval == a.last_interval && point.tau == a.last_stop) return a.t1;
  if (point.tau == static_cast<float>(later - earlier)) return later;
  if (point.tau == 0.0f) return earlier;
  return earlier + static_cast<double>(point.tau);
}

// The k-th point of all, placed.
HEADRACE_HD inline void place_path_point(const PathPlaceParams& a, std::uint64_t k) {
  const std::uint64_t line = half_line_of(a.offsets, a.count, k);
  const std::uint64_t j = k - a.offsets[line];
  const PathPoint point = a.points[line * a.point_capacity + j];
  a.out_points[k] = point.p;
  a.out_velocities[k] = point.v;
  a.out_times[k] = j == 0 ? a.seed_times[line] : path_point_time(a, point);
}

}  // namespace headrace::workloads::streamlines
