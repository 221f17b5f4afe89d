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

// What gather_path_points copies: of each of `count` paths, its points up to its last, back to back in
// path order; offsets[i] is where path i's begin among them, offsets[count] their total.
struct PathGatherParams {
  const PathPoint* points = nullptr;
  std::uint32_t point_capacity = 0;
  const std::uint64_t* offsets = nullptr;
  std::uint64_t count = 0;
  PathPoint* out = nullptr;
};

// The k-th gathered point.
HEADRACE_HD inline void gather_path_point(const PathGatherParams& a, std::uint64_t k) {
  const std::uint64_t line = half_line_of(a.offsets, a.count, k);
  a.out[k] = a.points[line * a.point_capacity + (k - a.offsets[line])];
}

}  // namespace headrace::workloads::streamlines
