// Streamlines through any velocity sampler (seed 002): fixed-step RK4 or adaptive RK45, forward,
// backward or both, ending at a step limit, at the domain's edge or where the flow stagnates; many
// seeds on many threads (more threads than cores is allowed: seed 002 finds oversubscription pays
// when threads wait for I/O). The sampler is `bool(const Vec3&, Vec3&) const`, safe to call from
// several threads; it returns false outside the domain and throws when data cannot be loaded (a
// block that failed never reads as zeros).
#pragma once

#include <cstdint>
#include <vector>

#include "headrace/detail/parallel_for.hpp"
#include "headrace/error.hpp"
#include "headrace/workloads/streamlines/streamline_math.hpp"

namespace headrace::workloads::streamlines {

enum class Integrator : std::uint8_t { rk4, rk45 };
enum class Direction : std::uint8_t { forward, backward, both };
enum class Termination : std::uint8_t { max_steps, left_domain, stagnant };

[[nodiscard]] const char* to_string(Termination termination) noexcept;

struct TraceOptions {
  Integrator integrator = Integrator::rk4;
  Direction direction = Direction::forward;
  float step_size = 0.01f;          // in the field's time units; rk45: the first step
  std::uint32_t max_steps = 1000;   // per direction
  float stagnant_speed = 1e-6f;     // |v| below this ends the line
  float tolerance = 1e-5f;          // rk45: largest local error accepted per step (world units)
  float min_step = 1e-6f, max_step = 1.0f;  // rk45: bounds of |h|
};

struct Streamline {
  std::vector<Vec3> points;  // seed order: backward part reversed, the seed, the forward part
  Termination forward_end = Termination::max_steps, backward_end = Termination::max_steps;
};

namespace detail {

// Steps from seed in one direction (sign +1 or -1), appending the points after the seed.
template <typename Sampler>
Termination trace_one_way(const Sampler& sample, Vec3 seed, float sign, const TraceOptions& options,
                          std::vector<Vec3>& out) {
  Vec3 p = seed;
  float h = sign * options.step_size;
  for (std::uint32_t steps = 0; steps < options.max_steps;) {
    Vec3 v;
    if (!sample(p, v)) return Termination::left_domain;
    if (length(v) < options.stagnant_speed) return Termination::stagnant;
    Vec3 next;
    if (options.integrator == Integrator::rk4) {
      if (!rk4_step(sample, p, h, next)) return Termination::left_domain;
    } else {
      float error = 0;
      if (!rk45_step(sample, p, h, next, error)) {
        // A stage left the domain: a shorter step may still land inside.
        if (std::abs(h) <= options.min_step) return Termination::left_domain;
        h = sign * std::max(options.min_step, 0.5f * std::abs(h));
        continue;
      }
      const float scale = error > 0 ? 0.9f * std::pow(options.tolerance / error, 0.2f) : 5.0f;
      const float grown = std::min(options.max_step, std::max(options.min_step, std::abs(h) * std::min(5.0f, std::max(0.2f, scale))));
      if (error > options.tolerance && std::abs(h) > options.min_step) {
        h = sign * grown;  // rejected: retry from p with the smaller step
        continue;
      }
      h = sign * grown;
    }
    out.push_back(next);
    p = next;
    ++steps;
  }
  return Termination::max_steps;
}

}  // namespace detail

template <typename Sampler>
Streamline trace(const Sampler& sample, Vec3 seed, const TraceOptions& options) {
  HEADRACE_EXPECT(options.step_size > 0 && options.max_steps > 0, UsageError,
                  "streamlines need a positive step size and step count");
  Streamline line;
  if (options.direction != Direction::forward) {
    std::vector<Vec3> back;
    line.backward_end = detail::trace_one_way(sample, seed, -1.0f, options, back);
    line.points.assign(back.rbegin(), back.rend());
  }
  line.points.push_back(seed);
  if (options.direction != Direction::backward)
    line.forward_end = detail::trace_one_way(sample, seed, 1.0f, options, line.points);
  return line;
}

// Polylines in one array: line i is points[offsets[i], offsets[i + 1]), one line per seed in order.
struct Polylines {
  std::vector<Vec3> points;
  std::vector<std::int64_t> offsets{0};
  std::vector<Streamline> lines;  // per seed, with how it ended (points moved into `points`)
};

// Traces every seed on `threads` threads (0: one per core; more than the cores is allowed).
template <typename Sampler>
Polylines trace_all(const Sampler& sample, const std::vector<Vec3>& seeds, const TraceOptions& options,
                    unsigned threads = 0) {
  std::vector<Streamline> lines(seeds.size());
  headrace::detail::parallel_for(seeds.size(), threads,
                                 [&](std::uint64_t i) { lines[i] = trace(sample, seeds[i], options); });
  Polylines out;
  for (auto& line : lines) {
    out.points.insert(out.points.end(), line.points.begin(), line.points.end());
    out.offsets.push_back(static_cast<std::int64_t>(out.points.size()));
    line.points.clear();
  }
  out.lines = std::move(lines);
  return out;
}

}  // namespace headrace::workloads::streamlines
