// Streamlines through any velocity sampler (seed 002): fixed-step RK4 or adaptive RK45, forward,
// backward or both, ending at a step limit, at the domain's edge or where the flow stagnates; many
// seeds on many threads (more threads than cores is allowed: seed 002 finds oversubscription pays
// when threads wait for I/O). The sampler is `bool(const Vec3&, Vec3&) const`, safe to call from
// several threads; it returns false outside the domain and throws when data cannot be loaded (a
// block that failed never reads as zeros).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "headrace/detail/enum_names.hpp"
#include "headrace/detail/parallel_for.hpp"
#include "headrace/error.hpp"
#include "headrace/workloads/streamlines/line_stepper.hpp"

namespace headrace::workloads::streamlines {

inline constexpr headrace::detail::EnumNames<Integrator, 2> integrator_names{{{Integrator::rk4, "rk4"}, {Integrator::rk45, "rk45"}}};
inline constexpr headrace::detail::EnumNames<Direction, 3> direction_names{
    {{Direction::forward, "forward"}, {Direction::backward, "backward"}, {Direction::both, "both"}}};
inline constexpr headrace::detail::EnumNames<Termination, 5> termination_names{{{Termination::max_steps, "max_steps"},
                                                                                {Termination::left_domain, "left_domain"},
                                                                                {Termination::stagnant, "stagnant"},
                                                                                {Termination::stopped, "stopped"},
                                                                                {Termination::end_time, "end_time"}}};
[[nodiscard]] constexpr const char* to_string(Termination termination) noexcept {
  return headrace::detail::name_of(termination_names, termination);
}

struct Streamline {
  std::vector<Vec3> points;  // seed order: backward part reversed, the seed, the forward part
  std::vector<float> times;  // each point's integration time: negative backward, 0 at the seed
  Termination forward_end = Termination::max_steps, backward_end = Termination::max_steps;
};

namespace detail {

// Steps from seed in one direction (sign +1 or -1), appending the points after the seed and their times.
template <typename Sampler>
Termination trace_one_way(const Sampler& sample, Vec3 seed, float sign, const TraceOptions& options,
                          std::vector<Vec3>& out, std::vector<float>& times) {
  HalfLine line = start_half_line(seed, sign, options);
  advance_half_line(
      sample, line, options,
      [&](const TracedPoint& point) {
        out.push_back(point.p);
        times.push_back(point.time);
      },
      [] { return false; });
  return line.end;
}

}  // namespace detail

template <typename Sampler>
Streamline trace(const Sampler& sample, Vec3 seed, const TraceOptions& options) {
  HEADRACE_EXPECT(options.step_size > 0 && options.max_steps > 0, UsageError,
                  "streamlines need a positive step size and step count");
  Streamline line;
  if (options.direction != Direction::forward) {
    std::vector<Vec3> back;
    std::vector<float> back_times;
    line.backward_end = detail::trace_one_way(sample, seed, -1.0f, options, back, back_times);
    line.points.assign(back.rbegin(), back.rend());
    line.times.assign(back_times.rbegin(), back_times.rend());
  }
  line.points.push_back(seed);
  line.times.push_back(0.0f);
  if (options.direction != Direction::backward)
    line.forward_end = detail::trace_one_way(sample, seed, 1.0f, options, line.points, line.times);
  return line;
}

// Polylines in one array: line i is points[offsets[i], offsets[i + 1]), one line per seed in order.
struct Polylines {
  std::vector<Vec3> points;
  std::vector<float> times;  // per point, its integration time
  std::vector<std::int64_t> offsets{0};
  std::vector<Streamline> lines;  // per seed, with how it ended (points moved into `points`)
};

// Told the lines ended so far and the lines in all, now and then, from one thread at a time; false
// stops the run: lines not yet started are left at their seed, ended "stopped".
using TraceProgress = std::function<bool(std::uint64_t ended, std::uint64_t lines)>;

// Traces every seed on `threads` threads (0: one per core; more than the cores is allowed).
template <typename Sampler>
Polylines trace_all(const Sampler& sample, const std::vector<Vec3>& seeds, const TraceOptions& options,
                    unsigned threads = 0, const TraceProgress& progress = nullptr) {
  std::vector<Streamline> lines(seeds.size());
  std::atomic<std::uint64_t> ended{0};
  std::atomic<bool> stopped{false};
  std::mutex reporting;  // one thread tells at a time; the others go on tracing
  auto told_at = std::chrono::steady_clock::now();
  headrace::detail::parallel_for(seeds.size(), threads, [&](std::uint64_t i) {
    if (stopped) {
      lines[i].points = {seeds[i]};
      lines[i].times = {0.0f};
      lines[i].forward_end = lines[i].backward_end = Termination::stopped;
      return;
    }
    lines[i] = trace(sample, seeds[i], options);
    const std::uint64_t done = ++ended;
    if (!progress || !reporting.try_lock()) return;
    std::lock_guard told(reporting, std::adopt_lock);
    const auto now = std::chrono::steady_clock::now();
    if (now - told_at < std::chrono::milliseconds(100) && done != seeds.size()) return;
    told_at = now;
    if (!progress(done, seeds.size())) stopped = true;
  });
  Polylines out;
  for (auto& line : lines) {
    out.points.insert(out.points.end(), line.points.begin(), line.points.end());
    out.times.insert(out.times.end(), line.times.begin(), line.times.end());
    out.offsets.push_back(static_cast<std::int64_t>(out.points.size()));
    line.points.clear();
    line.times.clear();
  }
  out.lines = std::move(lines);
  return out;
}

}  // namespace headrace::workloads::streamlines
