// The GPU tracer's round (issue 5): every unfinished half-line steps through a cache of units resident
// in memory until it ends or needs a unit that is not there; it then counts that unit as wanted and
// waits, unchanged, for the next round. HEADRACE_HD: the CUDA kernel and the host executor (the CPU
// reference the GPU is tested against) run this very code, one half-line per thread.
#pragma once

#include <cstdint>
#include <limits>

#include "headrace/workloads/streamlines/line_stepper.hpp"
#include "headrace/workloads/streamlines/unit_layouts.hpp"

namespace headrace::workloads::streamlines {

// The cache as a round sees it. Units are written only between rounds.
struct ResidentUnits {
  const std::int32_t* slot_of_unit = nullptr;  // per unit: its slot, or -1 when not resident
  const float* pool = nullptr;                 // slot s holds its unit at pool + s * unit_floats
  std::uint64_t unit_floats = 0;
  std::uint32_t* wanted = nullptr;     // per unit: samples that needed it this round while absent
  std::uint32_t* last_used = nullptr;  // per unit: the last round that read it (eviction spares those)
  std::uint32_t round = 0;
};

namespace detail {

// Relaxed atomics: many threads count the same unit, and write the same round number.
HEADRACE_HD inline void count_up(std::uint32_t* counter) {
#if defined(__CUDA_ARCH__)
  atomicAdd(counter, 1u);
#else
  __atomic_fetch_add(counter, 1u, __ATOMIC_RELAXED);
#endif
}
HEADRACE_HD inline void add(unsigned long long* counter, unsigned long long value) {
#if defined(__CUDA_ARCH__)
  atomicAdd(counter, value);
#else
  __atomic_fetch_add(counter, value, __ATOMIC_RELAXED);
#endif
}
HEADRACE_HD inline void mark_round(std::uint32_t* where, std::uint32_t round) {
#if defined(__CUDA_ARCH__)
  if (*where != round) *where = round;  // most samples repeat a unit: read before writing
#else
  if (__atomic_load_n(where, __ATOMIC_RELAXED) != round) __atomic_store_n(where, round, __ATOMIC_RELAXED);
#endif
}

}  // namespace detail

// Trilinear sampling through the resident cache; false outside the grid, or with *missing set when a
// corner's unit is absent (every absent unit of the cell counted as wanted, so one round brings them all).
// One sampler serves one half-line for one round, so it keeps the last cell's corners: the stages of a
// step mostly fall in the same cell, and the Hilbert layout's index is not computed again for them.
template <typename Units>
struct ResidentSampler {
  Units units;
  ResidentUnits cache;
  bool* missing;
  std::uint64_t* first_absent = nullptr;  // when given: the first absent unit the half-line needed
  mutable std::int32_t cell[3] = {-1, -1, -1};
  mutable Vec3 corner[8] = {};

  HEADRACE_HD bool operator()(const Vec3& p, Vec3& v) const {
    std::int32_t c[3];
    float f[3];
    if (!units.geometry().locate(p, c, f)) return false;
    if (c[0] == cell[0] && c[1] == cell[1] && c[2] == cell[2]) {
      v = trilinear(corner, f);
      return true;
    }
    bool absent = false;
    std::uint64_t previous = ~std::uint64_t{0};
    for (int n = 0; n < 8; ++n) {
      std::uint64_t element = 0;
      const std::uint64_t unit = units.unit_of(c[0] + (n & 1), c[1] + ((n >> 1) & 1), c[2] + ((n >> 2) & 1), element);
      const std::int32_t slot = cache.slot_of_unit[unit];
      const bool repeat = unit == previous;
      previous = unit;
      if (slot < 0) {
        if (!repeat) detail::count_up(&cache.wanted[unit]);
        if (first_absent && !absent && *first_absent == ~std::uint64_t{0}) *first_absent = unit;
        absent = true;
        continue;
      }
      if (!repeat) detail::mark_round(&cache.last_used[unit], cache.round);
      const float* xyz = cache.pool + static_cast<std::uint64_t>(slot) * cache.unit_floats + 3 * element;
      corner[n] = {xyz[0], xyz[1], xyz[2]};
    }
    if (absent) {
      *missing = true;
      cell[0] = -1;  // the corners read are incomplete
      return false;
    }
    cell[0] = c[0], cell[1] = c[1], cell[2] = c[2];
    v = trilinear(corner, f);
    return true;
  }
};

// What a round reports: a round with neither steps nor ended lines made no progress.
struct RoundCounters {
  unsigned long long steps = 0, ended = 0;
};

// What a round works on: half-lines first_line .. first_line + line_count - 1 (the window the host
// lets run); half-line i keeps its points (with their integration times) at points + i * point_capacity.
template <typename Units>
struct RoundParams {
  Units units;
  ResidentUnits cache;
  TraceOptions options;
  HalfLine* lines = nullptr;
  TracedPoint* points = nullptr;
  std::uint64_t first_line = 0, line_count = 0;
  std::uint32_t point_capacity = 0;  // options.max_steps
  RoundCounters* counters = nullptr;
  // Per half-line: the first unit it waits for after the round (all ones: none), which a job of
  // several ranks hands the line on by (HandOffTrace).
  std::uint64_t* waits_for = nullptr;
};

// What collect gathers: of each of `count` half-lines, its points from step from[i] up to its last,
// back to back in half-line order; offsets[i] is where line i's begin among them, offsets[count] their
// total. Only these leave the GPU, not the point_capacity slots of every line.
struct GatherParams {
  const TracedPoint* points = nullptr;
  std::uint32_t point_capacity = 0;
  const std::uint32_t* from = nullptr;
  const std::uint64_t* offsets = nullptr;
  std::uint64_t count = 0;
  TracedPoint* out = nullptr;
};

// The half-line of the k-th of all points, of `count` half-lines whose points begin at `offsets`: the last
// whose offset is at most k (lines without points share their successor's offset).
HEADRACE_HD inline std::uint64_t half_line_of(const std::uint64_t* offsets, std::uint64_t count, std::uint64_t k) {
  std::uint64_t low = 0, high = count;
  while (high - low > 1) {
    const std::uint64_t middle = low + (high - low) / 2;
    if (offsets[middle] <= k) low = middle;
    else high = middle;
  }
  return low;
}

// The k-th gathered point.
HEADRACE_HD inline void gather_point(const GatherParams& a, std::uint64_t k) {
  const std::uint64_t line = half_line_of(a.offsets, a.count, k);
  a.out[k] = a.points[line * a.point_capacity + a.from[line] + (k - a.offsets[line])];
}

// Where the seeds' lines (Polylines, assemble's layout) take the half-lines' points: a seed's backward half
// reversed in front of the seed, its forward half after it. Point j of half-line i goes to first[i] - j
// when reversed[i], else to first[i] + j; offsets are gathered_offsets' (every step). The points are read
// from each half-line's slots (point_capacity a line) or, with point_capacity 0, back to back as collect
// gathers them. One function for the host's lines and the GPU's, so both put every point in one place.
struct PlaceParams {
  const TracedPoint* points = nullptr;
  std::uint32_t point_capacity = 0;
  const std::uint64_t* offsets = nullptr;
  std::uint64_t count = 0;
  const std::uint64_t* first = nullptr;
  const std::uint8_t* reversed = nullptr;
  Vec3* out_points = nullptr;
  float* out_times = nullptr;
};

// The k-th point of all, of half-line `line`.
HEADRACE_HD inline void place_point_of(const PlaceParams& a, std::uint64_t line, std::uint64_t k) {
  const std::uint64_t j = k - a.offsets[line];
  const TracedPoint point = a.points[a.point_capacity == 0 ? k : line * a.point_capacity + j];
  const std::uint64_t at = a.reversed[line] ? a.first[line] - j : a.first[line] + j;
  a.out_points[at] = point.p;
  a.out_times[at] = point.time;
}

// The k-th point of all.
HEADRACE_HD inline void place_point(const PlaceParams& a, std::uint64_t k) { place_point_of(a, half_line_of(a.offsets, a.count, k), k); }

// What a sampling round reports: points sampled in it, and points of its window still waiting.
struct SampleCounters {
  unsigned long long sampled = 0, waiting = 0;
};

// The flow's velocity at `count` points through the cache (the lines' output: the vectors ParaView colours
// them by), in rounds as the lines are traced: a point whose cell's units are all resident is sampled
// (NaN outside the grid) and done; the others count their absent units as wanted and wait for the next
// round. The tracer's own sampler, so the very values its steps read.
template <typename Units>
struct SampleParams {
  Units units;
  ResidentUnits cache;
  const Vec3* points = nullptr;
  Vec3* velocities = nullptr;
  std::uint8_t* done = nullptr;
  SampleCounters* counters = nullptr;
  std::uint64_t first = 0, count = 0;  // the window of points this round samples
};

template <typename Units>
HEADRACE_HD void sample_resident_point(const SampleParams<Units>& a, std::uint64_t i) {
  const std::uint64_t k = a.first + i;
  if (a.done[k]) return;
  bool missing = false;
  const ResidentSampler<Units> sample{a.units, a.cache, &missing};
  Vec3 v;
  if (!sample(a.points[k], v)) {
    if (missing) {
      detail::add(&a.counters->waiting, 1);
      return;
    }
#if defined(__CUDA_ARCH__)
    const float nan = __int_as_float(0x7fc00000);  // quiet_NaN's bits, as sample_flow's
#else
    const float nan = std::numeric_limits<float>::quiet_NaN();
#endif
    v = {nan, nan, nan};
  }
  a.velocities[k] = v;
  a.done[k] = 1;
  detail::add(&a.counters->sampled, 1);
}

// Runs the k-th half-line of the round's window.
template <typename Units>
HEADRACE_HD void advance_resident_line(const RoundParams<Units>& a, std::uint64_t k) {
  const std::uint64_t i = a.first_line + k;
  HalfLine line = a.lines[i];
  if (line.ended) return;
  bool missing = false;
  std::uint64_t* waits_for = a.waits_for ? a.waits_for + i : nullptr;
  if (waits_for) *waits_for = ~std::uint64_t{0};
  const ResidentSampler<Units> sample{a.units, a.cache, &missing, waits_for};
  TracedPoint* out = a.points + i * a.point_capacity;
  const std::uint32_t before = line.steps;
  advance_half_line(sample, line, a.options, [&](const TracedPoint& point) { out[line.steps] = point; },
                    [&] { return missing; });
  a.lines[i] = line;
  if (line.steps != before) detail::add(&a.counters->steps, line.steps - before);
  if (line.ended) detail::add(&a.counters->ended, 1);
}

}  // namespace headrace::workloads::streamlines
