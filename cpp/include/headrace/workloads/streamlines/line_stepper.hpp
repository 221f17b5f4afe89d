// One streamline, one direction, step by step: the loop of the CPU tracer and of the GPU kernel alike
// (HEADRACE_HD), so the GPU tracer is tested by the very code the CPU runs. A half-line can stop in the
// middle (the GPU tracer suspends it when a block it needs is not resident) and go on later from the
// same state, producing the same points as if it had never stopped.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "headrace/workloads/streamlines/streamline_math.hpp"

namespace headrace::workloads::streamlines {

enum class Integrator : std::uint8_t { rk4, rk45 };
enum class Direction : std::uint8_t { forward, backward, both };
// A seed's half-lines: its backward one first, then its forward one, when traced both ways.
[[nodiscard]] constexpr std::uint32_t half_lines_per_seed(Direction direction) noexcept { return direction == Direction::both ? 2 : 1; }
// stopped: the run was stopped (a time budget) before the line ended; it holds the points it had.
// end_time: a pathline reached the time it was traced to (pathline_math.hpp).
enum class Termination : std::uint8_t { max_steps, left_domain, stagnant, stopped, end_time };

struct TraceOptions {
  Integrator integrator = Integrator::rk4;
  Direction direction = Direction::forward;
  float step_size = 0.01f;          // in the field's time units; rk45: the first step
  std::uint32_t max_steps = 1000;   // per direction
  float stagnant_speed = 1e-6f;     // |v| below this ends the line
  float tolerance = 1e-5f;          // rk45: largest local error accepted per step (world units)
  float min_step = 1e-6f, max_step = 1.0f;  // rk45: bounds of |h|
};

// Where a half-line stands: its last point, its next step (signed: negative traces backward), its
// integration time (the sum of the signed steps taken: ParaView's IntegrationTime), the steps taken,
// and once ended, why.
struct HalfLine {
  Vec3 p;
  float h = 0;
  float time = 0;
  std::uint32_t steps = 0;
  std::uint8_t ended = 0;
  Termination end = Termination::max_steps;
};

// A point a line reached and its integration time.
struct TracedPoint {
  Vec3 p;
  float time = 0;
};

[[nodiscard]] HEADRACE_HD inline HalfLine start_half_line(Vec3 seed, float sign, const TraceOptions& options) {
  HalfLine line;
  line.p = seed;
  line.h = sign * options.step_size;
  return line;
}

enum class StepOutcome : std::uint8_t { advanced, retry, left_domain, stagnant };

// x^(1/5) for x > 0 by Newton's method from an exponent-scaled first guess: only IEEE multiplies,
// divides and adds, so the CPU and the GPU (with -fmad=false) get the same bits, where powf may not.
// RK45 sizes its next step with it.
[[nodiscard]] HEADRACE_HD inline float fifth_root(float x) {
  std::uint32_t bits = 0;
  memcpy(&bits, &x, sizeof bits);
  bits = 0x3f800000u + static_cast<std::uint32_t>((static_cast<std::int32_t>(bits) - 0x3f800000) / 5);
  float r = 0;
  memcpy(&r, &bits, sizeof r);
  for (int i = 0; i < 6; ++i) {
    const float r2 = r * r;
    r = r - (r2 * r2 * r - x) / (5.0f * r2 * r2);
  }
  return r;
}

// RK45's step after one whose stage left the domain: half as long (sign: the direction), no shorter than
// min_step. The streamlines and the pathlines (pathline_math.hpp) retry with it.
[[nodiscard]] HEADRACE_HD inline float rk45_halved(float size, float sign, const TraceOptions& o) {
  return sign * fmaxf(o.min_step, 0.5f * size);
}

// RK45's next step after one of `size` whose local error was `error`: grown or shrunk toward the
// tolerance, at most 5 x and at least 0.2 x, within [min_step, max_step], signed by the direction.
[[nodiscard]] HEADRACE_HD inline float rk45_resized(float size, float sign, float error, const TraceOptions& o) {
  const float scale = error > 0 ? 0.9f * fifth_root(o.tolerance / error) : 5.0f;
  return sign * fminf(o.max_step, fmaxf(o.min_step, size * fminf(5.0f, fmaxf(0.2f, scale))));
}

// One attempt from `line`: `next` holds the point and step after it (advanced), or the smaller step to
// retry with (rk45 rejected the step, or a stage left the domain); `line` is not changed, so a caller
// whose sampler could not answer can try the same attempt again later.
template <typename Sampler>
HEADRACE_HD StepOutcome step_line(const Sampler& sample, const HalfLine& line, const TraceOptions& o, Vec3& next_p,
                                  float& next_h) {
  Vec3 v;
  if (!sample(line.p, v)) return StepOutcome::left_domain;
  if (length(v) < o.stagnant_speed) return StepOutcome::stagnant;
  const float sign = line.h < 0 ? -1.0f : 1.0f;
  const float size = fabsf(line.h);
  if (o.integrator == Integrator::rk4) {
    if (!rk4_step(sample, line.p, line.h, next_p)) return StepOutcome::left_domain;
    next_h = line.h;
    return StepOutcome::advanced;
  }
  float error = 0;
  if (!rk45_step(sample, line.p, line.h, next_p, error)) {
    // A stage left the domain: a shorter step may still land inside.
    if (size <= o.min_step) return StepOutcome::left_domain;
    next_h = rk45_halved(size, sign, o);
    return StepOutcome::retry;
  }
  next_h = rk45_resized(size, sign, error, o);
  return error > o.tolerance && size > o.min_step ? StepOutcome::retry : StepOutcome::advanced;
}

// Steps `line` until it ends (true) or `suspended()` says the sampler could not answer the last
// attempt (false: the line is left as before that attempt). emit(TracedPoint) receives each new point.
template <typename Sampler, typename Emit, typename Suspended>
HEADRACE_HD bool advance_half_line(const Sampler& sample, HalfLine& line, const TraceOptions& o, Emit&& emit,
                                   Suspended&& suspended) {
  while (!line.ended) {
    if (line.steps >= o.max_steps) {
      line.ended = 1;
      line.end = Termination::max_steps;
      break;
    }
    Vec3 next_p;
    float next_h = line.h;
    const StepOutcome outcome = step_line(sample, line, o, next_p, next_h);
    if (suspended()) return false;
    switch (outcome) {
      case StepOutcome::advanced:
        line.time += line.h;  // the step just taken
        emit(TracedPoint{next_p, line.time});
        line.p = next_p;
        line.h = next_h;
        ++line.steps;
        break;
      case StepOutcome::retry: line.h = next_h; break;
      case StepOutcome::left_domain:
        line.ended = 1;
        line.end = Termination::left_domain;
        break;
      case StepOutcome::stagnant:
        line.ended = 1;
        line.end = Termination::stagnant;
        break;
    }
  }
  return true;
}

}  // namespace headrace::workloads::streamlines
