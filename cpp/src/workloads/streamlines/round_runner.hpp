// The GPU tracer's rounds (resident_tracer.hpp), private to it and HandOffTrace: one round's state in host
// memory and what runs rounds over half-lines with the cache's pool in host memory (host_rounds.cpp, the
// reference) or GPU memory (device_rounds.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "headrace/engine/queue.hpp"
#include "half_lines.hpp"
#include "headrace/workloads/streamlines/resident_lines.hpp"

namespace headrace::workloads::streamlines::resident {

// One round's inputs and outputs, in host memory.
struct RoundState {
  std::uint32_t round = 0;
  std::uint64_t first_line = 0, window = 0;  // the half-lines that run
  std::vector<std::int32_t> slot_of_unit;    // -1: absent
  std::vector<std::uint32_t> wanted, last_used;
};

// Half-lines a stopped run cut short end `stopped`.
inline void end_stopped(std::vector<HalfLine>& lines) {
  for (HalfLine& line : lines)
    if (!line.ended) line.end = Termination::stopped;
}

// The cache's pool of slots, in host or GPU memory, as the loads that fill it see it (UnitLoads): the
// streamlines' rounds and the pathlines' (path_rounds.hpp) alike. Slot s + 1 follows slot s in memory.
class SlotPool {
 public:
  virtual ~SlotPool() = default;
  [[nodiscard]] virtual queue::MemoryKind memory() const = 0;
  [[nodiscard]] virtual std::uintptr_t slot_address(std::uint64_t slot) const = 0;
  // After the queue loaded units up to `fence`: the next round must see them.
  virtual void loaded(const engine::Queue& queue, queue::FenceId fence) = 0;
};

// Runs rounds over half-lines with the cache's pool in host or GPU memory.
template <typename Units>
class RoundRunner : public SlotPool {
 public:
  // Runs one round over the window; fills state.wanted and state.last_used.
  virtual RoundCounters run(RoundState& state) = 0;
  // The half-lines after the last round, and of each its points from step from[i] (none given: 0) to
  // its last, appended to `points` back to back in half-line order (gathered_offsets says where each
  // line's begin after the points there were): a rank's runs add to what it traced, with no copy.
  virtual void collect(std::span<const std::uint32_t> from, std::vector<HalfLine>& lines, std::vector<TracedPoint>& points) = 0;
  // The seeds' lines after the last round (assemble's), a half-line not ended ending `stopped` where the
  // run was stopped: by default collected and joined on the host.
  virtual Polylines polylines(const std::vector<Vec3>& seeds, const TraceOptions& options, bool stopped) {
    std::vector<HalfLine> lines;
    std::vector<TracedPoint> points;
    collect({}, lines, points);
    if (stopped) end_stopped(lines);
    return assemble(seeds, options, lines, points);
  }
  // Other half-lines from now on (the pool stays): a rank's lines change between a job's rounds.
  virtual void restart(const std::vector<HalfLine>& lines) = 0;
  // Per half-line, the unit it waits for after the last round (all ones: none).
  virtual std::vector<std::uint64_t> waits_for() = 0;
  // The flow's velocity at `points` (which must outlive the sampling) in rounds: each sample_round samples
  // the points of [first, first + window) whose units are resident and fills state.wanted with the absent
  // units of the others; sampled() gives the velocities (NaN outside the grid) and lets go of the rest.
  virtual void start_sampling(const std::vector<Vec3>& points) = 0;
  // Starts sampling at the points of the lines polylines() gave last where the runner kept them itself
  // (the GPU's stay in its memory: the host's copy is not read, so the caller may write it meanwhile);
  // false where it did not keep them (start_sampling then).
  virtual bool start_sampling_lines() { return false; }
  virtual SampleCounters sample_round(RoundState& state, std::uint64_t first, std::uint64_t window) = 0;
  virtual std::vector<Vec3> sampled() = 0;
};

// Where each half-line's points begin among those collect gathers from steps `from` (empty: 0), and
// their total last: count + 1 offsets.
inline std::vector<std::uint64_t> gathered_offsets(const std::vector<HalfLine>& lines, std::span<const std::uint32_t> from) {
  std::vector<std::uint64_t> offsets(lines.size() + 1, 0);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::uint32_t first = from.empty() ? 0 : from[i];
    offsets[i + 1] = offsets[i] + (lines[i].steps > first ? lines[i].steps - first : 0);
  }
  return offsets;
}

// The starting steps `from` as collect's gather reads them: zeros for none given.
inline std::vector<std::uint32_t> starting_steps(std::span<const std::uint32_t> from, std::size_t count) {
  return from.empty() ? std::vector<std::uint32_t>(count, 0) : std::vector<std::uint32_t>(from.begin(), from.end());
}

// The parameters every round of a runner shares; the pointers are the runner's to set.
template <typename Units>
RoundParams<Units> round_params(const Units& units, const TraceOptions& options, std::uint64_t unit_bytes) {
  RoundParams<Units> params;
  params.units = units;
  params.options = options;
  params.cache.unit_floats = unit_bytes / sizeof(float);
  params.point_capacity = options.max_steps;
  return params;
}

// The sampling's parameters over the window of points in the round of `state`.
template <typename Units>
SampleParams<Units> sample_params(const RoundParams<Units>& params, const RoundState& state, std::uint64_t first,
                                  std::uint64_t window) {
  SampleParams<Units> s;
  s.units = params.units;
  s.cache = params.cache;
  s.cache.round = state.round;
  s.first = first, s.count = window;
  return s;
}

// The shared parameters for the round and window of `state`.
template <typename Units>
RoundParams<Units> window_of(RoundParams<Units> params, const RoundState& state) {
  params.cache.round = state.round;
  params.first_line = state.first_line;
  params.line_count = state.window;
  return params;
}

// A runner over `slots` units of unit_bytes (of unit_count in the flow), starting with `lines`: host
// memory on `threads` CPU threads (0: one per core), or device memory on that GPU.
template <typename Units>
[[nodiscard]] std::unique_ptr<RoundRunner<Units>> make_host_rounds(const Units& units, const TraceOptions& options,
                                                                   std::uint64_t unit_bytes, std::uint64_t slots,
                                                                   std::vector<HalfLine> lines, unsigned threads);
template <typename Units>
[[nodiscard]] std::unique_ptr<RoundRunner<Units>> make_device_rounds(int device, const Units& units, const TraceOptions& options,
                                                                     std::uint64_t unit_bytes, std::uint64_t slots,
                                                                     std::uint64_t unit_count, const std::vector<HalfLine>& lines);

// The device's runner, or the host's for device -1.
template <typename Units>
[[nodiscard]] std::unique_ptr<RoundRunner<Units>> make_round_runner(int device, const Units& units, const TraceOptions& options,
                                                                    std::uint64_t unit_bytes, std::uint64_t slots,
                                                                    std::uint64_t unit_count, std::vector<HalfLine> lines,
                                                                    unsigned threads) {
  if (device >= 0) return make_device_rounds(device, units, options, unit_bytes, slots, unit_count, lines);
  return make_host_rounds(units, options, unit_bytes, slots, std::move(lines), threads);
}

}  // namespace headrace::workloads::streamlines::resident
