// The math of pathlines (issue 40), shared by the CPU reference and the GPU kernels: a velocity known at
// the frames' times and linear in time between the two frames that bracket a time, steps that end on a
// frame's time instead of crossing it (rk4_step_in_time and rk45_step_in_time, streamline_math.hpp), and
// one particle's path stepped through one frame interval at a time.
//
// Time inside a frame interval is local: tau runs from 0 (the earlier frame) to span (the later one), in
// float, so a series' late times lose no digits to the interval's steps; a point's absolute time is its
// interval's earlier frame's time (double, on the host) plus tau. A field sampler is a callable
// `bool(const Vec3& point, Vec3& velocity)` as in streamline_math.hpp; a sampler in time is
// `bool(const Vec3& point, float tau, Vec3& velocity)`.
#pragma once

#include <cstdint>

#include "headrace/workloads/streamlines/line_stepper.hpp"
#include "headrace/workloads/streamlines/streamline_math.hpp"

namespace headrace::workloads::streamlines {

// The velocity between two frames span apart: each frame's value at the point (its own trilinear
// sampler), weighted by how far tau is from each. False where either frame has no velocity. Both frames
// are always asked: a resident cache's sampler counts the units it lacks as wanted, and a round must want
// both frames' at once (else it loads one frame's, then evicts them as unread while loading the other's).
template <typename Sampler>
struct BetweenFrames {
  Sampler earlier, later;
  float span = 1.0f;  // the later frame's time minus the earlier's, > 0

  HEADRACE_HD bool operator()(const Vec3& p, float tau, Vec3& velocity) const {
    Vec3 a, b;
    const bool has_earlier = earlier(p, a);
    const bool has_later = later(p, b);
    if (!has_earlier || !has_later) return false;
    const float w = tau / span;
    velocity = (1.0f - w) * a + w * b;
    return true;
  }
};

// The step of size h from tau (negative h: backward in time) shortened so it ends on `stop` when it would
// cross it: stop is where the interval's steps end in their direction (its later frame, its earlier one
// backward, or the time traced to when that comes first), so no step mixes two intervals.
HEADRACE_HD inline float step_within(float tau, float h, float stop) {
  if (h >= 0.0f) return tau + h > stop ? stop - tau : h;
  return tau + h < stop ? stop - tau : h;
}

// One frame interval as a round of pathlines sees it: between frames `index` and index + 1, span apart in
// time. Its steps end at `stop`; there the path ends (last: the time traced to) or waits for the next
// interval. Forward in time the intervals run up, backward down.
struct PathInterval {
  std::uint32_t index = 0;
  float span = 1.0f;
  float stop = 1.0f;  // forward: in (0, span]; backward: in [0, span)
  std::uint8_t forward = 1;
  std::uint8_t last = 0;
};

// A particle's path so far: where it stands (the interval and tau in it), its next step (signed; the
// step taken may be shorter, to end on the interval's stop), the points it emitted (its seed's first, then
// one a step), and once ended, why. at_edge: it reached its interval's stop and waits for the next one.
struct PathLine {
  Vec3 p;
  float h = 0;
  float tau = 0;
  std::uint32_t interval = 0;
  std::uint32_t points = 0;
  std::uint8_t ended = 0, at_edge = 0;
  Termination end = Termination::max_steps;
};

// A point of a path: where, the flow's velocity there at its time, and that time (interval and tau).
struct PathPoint {
  Vec3 p;
  Vec3 v;
  float tau = 0;
  std::uint32_t interval = 0;
};

// A path from `seed` at time tau of `interval` (its first step h signed by the direction in time).
[[nodiscard]] HEADRACE_HD inline PathLine start_path(Vec3 seed, std::uint32_t interval, float tau, float h) {
  PathLine line;
  line.p = seed;
  line.interval = interval;
  line.tau = tau;
  line.h = h;
  return line;
}

// Steps `line` through interval `at` with the sampler in time over its two frames, until the line ends,
// reaches the interval's stop (at_edge) or `suspended()` says the sampler could not answer (false: the
// line is left as before that attempt, to go on later from the same state). A line of another interval
// waits: one at the edge of the interval before (in its direction) enters this one; one whose seed's time
// comes later is left alone. emit(PathPoint) receives each new point, the seed's first. RK4 keeps its
// step; RK45 sizes it as the streamlines do, except after a step shortened to the stop, which keeps the
// step asked. A step whose end has no velocity (outside the domain) ends the path at its last point, so
// every point carries its velocity. Slow flow does not end a path: it may speed up later.
template <typename TimeSampler, typename Emit, typename Suspended>
HEADRACE_HD bool advance_path(const TimeSampler& sample, PathLine& line, const PathInterval& at, const TraceOptions& o,
                              Emit&& emit, Suspended&& suspended) {
  if (line.ended) return true;
  if (line.interval != at.index) {
    const std::uint32_t before = at.forward ? at.index - 1 : at.index + 1;
    if (!line.at_edge || line.interval != before) return true;
    line.interval = at.index;
    line.tau = at.forward ? 0.0f : at.span;
    line.at_edge = 0;
  }
  if (line.points == 0) {  // the seed's own point, with its velocity
    Vec3 v;
    const bool sampled = sample(line.p, line.tau, v);
    if (suspended()) return false;
    if (!sampled) {
      line.ended = 1;
      line.end = Termination::left_domain;
      return true;
    }
    emit(PathPoint{line.p, v, line.tau, line.interval});
    line.points = 1;
  }
  const float sign = line.h < 0 ? -1.0f : 1.0f;
  while (!line.ended && !line.at_edge) {
    if (line.tau == at.stop) {
      if (at.last) {
        line.ended = 1;
        line.end = Termination::end_time;
      } else {
        line.at_edge = 1;
      }
      break;
    }
    if (line.points > o.max_steps) {  // the seed's point and max_steps steps
      line.ended = 1;
      line.end = Termination::max_steps;
      break;
    }
    const float taken = step_within(line.tau, line.h, at.stop);
    const bool shortened = taken != line.h;
    const float size = fabsf(taken);
    Vec3 next_p;
    float next_h = line.h;
    if (o.integrator == Integrator::rk4) {
      const bool stepped = rk4_step_in_time(sample, line.p, line.tau, taken, next_p);
      if (suspended()) return false;
      if (!stepped) {
        line.ended = 1;
        line.end = Termination::left_domain;
        break;
      }
    } else {
      float error = 0;
      const bool stepped = rk45_step_in_time(sample, line.p, line.tau, taken, next_p, error);
      if (suspended()) return false;
      if (!stepped) {  // a stage left the domain: a shorter step may still land inside
        if (size <= o.min_step) {
          line.ended = 1;
          line.end = Termination::left_domain;
          break;
        }
        line.h = rk45_halved(size, sign, o);
        continue;
      }
      const float suggested = rk45_resized(size, sign, error, o);
      if (error > o.tolerance && size > o.min_step) {
        line.h = suggested;
        continue;
      }
      if (!shortened) next_h = suggested;
    }
    const float next_tau = shortened ? at.stop : line.tau + taken;  // on the stop exactly, whatever the rounding
    Vec3 v;
    const bool sampled = sample(next_p, next_tau, v);
    if (suspended()) return false;
    if (!sampled) {
      line.ended = 1;
      line.end = Termination::left_domain;
      break;
    }
    emit(PathPoint{next_p, v, next_tau, line.interval});
    line.p = next_p;
    line.tau = next_tau;
    line.h = next_h;
    ++line.points;
  }
  return true;
}

}  // namespace headrace::workloads::streamlines
