// The math of pathlines (issue 40), shared by the CPU reference and the GPU kernels: a velocity known at
// the frames' times and linear in time between the two frames that bracket a time, and steps that end on
// a frame's time instead of crossing it (rk4_step_in_time and rk45_step_in_time, streamline_math.hpp).
//
// Time inside a frame interval is local: tau runs from 0 (the earlier frame) to span (the later one), in
// float, so a series' late times lose no digits to the interval's steps; the tracer keeps each particle's
// absolute time apart. A field sampler is a callable `bool(const Vec3& point, Vec3& velocity)` as in
// streamline_math.hpp; a sampler in time is `bool(const Vec3& point, float tau, Vec3& velocity)`.
#pragma once

#include "headrace/workloads/streamlines/streamline_math.hpp"

namespace headrace::workloads::streamlines {

// The velocity between two frames span apart: each frame's value at the point (its own trilinear
// sampler), weighted by how far tau is from each. False where either frame has no velocity.
template <typename Sampler>
struct BetweenFrames {
  Sampler earlier, later;
  float span = 1.0f;  // the later frame's time minus the earlier's, > 0

  HEADRACE_HD bool operator()(const Vec3& p, float tau, Vec3& velocity) const {
    Vec3 a, b;
    if (!earlier(p, a) || !later(p, b)) return false;
    const float w = tau / span;
    velocity = (1.0f - w) * a + w * b;
    return true;
  }
};

// The step of size h from tau (negative h: backward in time) shortened so it ends on the interval's
// edge in its direction (span forward, 0 backward) when it would cross it: no step mixes two intervals.
HEADRACE_HD inline float step_within(float tau, float h, float span) {
  if (h >= 0.0f) return tau + h > span ? span - tau : h;
  return tau + h < 0.0f ? -tau : h;
}

}  // namespace headrace::workloads::streamlines
