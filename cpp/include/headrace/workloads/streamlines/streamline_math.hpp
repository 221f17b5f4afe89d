// The math of streamline tracing (seed 002), shared by the CPU tracer and the GPU kernels: vectors,
// the grid's geometry, trilinear interpolation, and Runge-Kutta steps over any velocity sampler, steady
// or changing with time (pathline_math.hpp interpolates between frames).
// A sampler is a callable `bool(const Vec3& point, Vec3& velocity)`: false when the point has no
// velocity (outside the domain, or its block failed to load).
#pragma once

#include <cmath>
#include <cstdint>

#include "headrace/detail/host_device.hpp"
#include "headrace/detail/vec3.hpp"

namespace headrace::workloads::streamlines {

using headrace::detail::Vec3;

// A nodal grid: point (i, j, k) sits at origin + (i, j, k) * spacing, for i < dims.x and so on.
struct GridGeometry {
  std::int32_t dims[3] = {2, 2, 2};
  float origin[3] = {0, 0, 0};
  float spacing[3] = {1, 1, 1};

  // The cell holding world point p and the position inside it (each in [0, 1]); false outside the
  // grid. Points on the upper faces belong to the last cell.
  HEADRACE_HD bool locate(Vec3 p, std::int32_t cell[3], float fraction[3]) const {
    const float coordinate[3] = {p.x, p.y, p.z};
    for (int axis = 0; axis < 3; ++axis) {
      const float g = (coordinate[axis] - origin[axis]) / spacing[axis];
      const float last = static_cast<float>(dims[axis] - 1);
      if (!(g >= 0.0f && g <= last)) return false;  // also false for NaN
      std::int32_t c = static_cast<std::int32_t>(g);
      if (c >= dims[axis] - 1) c = dims[axis] - 2;
      cell[axis] = c;
      fraction[axis] = g - static_cast<float>(c);
    }
    return true;
  }
};

// Trilinear interpolation of the 8 corner values of a cell, corner c = i + 2 j + 4 k.
HEADRACE_HD inline Vec3 trilinear(const Vec3 corner[8], const float f[3]) {
  const float fx = f[0], fy = f[1], fz = f[2];
  const Vec3 x00 = (1 - fx) * corner[0] + fx * corner[1];
  const Vec3 x10 = (1 - fx) * corner[2] + fx * corner[3];
  const Vec3 x01 = (1 - fx) * corner[4] + fx * corner[5];
  const Vec3 x11 = (1 - fx) * corner[6] + fx * corner[7];
  const Vec3 y0 = (1 - fy) * x00 + fy * x10;
  const Vec3 y1 = (1 - fy) * x01 + fy * x11;
  return (1 - fz) * y0 + fz * y1;
}

// One classical fourth-order Runge-Kutta step in space and time from time tau, of size h (negative h
// traces backward), over a sampler `bool(const Vec3& point, float tau, Vec3& velocity)`: the stages sample
// at tau, tau + h / 2 and tau + h. False when a stage point has no velocity; next is then unchanged.
template <typename TimeSampler>
HEADRACE_HD bool rk4_step_in_time(const TimeSampler& sample, Vec3 p, float tau, float h, Vec3& next) {
  Vec3 k1, k2, k3, k4;
  if (!sample(p, tau, k1)) return false;
  if (!sample(p + (0.5f * h) * k1, tau + 0.5f * h, k2)) return false;
  if (!sample(p + (0.5f * h) * k2, tau + 0.5f * h, k3)) return false;
  if (!sample(p + h * k3, tau + h, k4)) return false;
  next = p + (h / 6.0f) * (k1 + 2.0f * k2 + 2.0f * k3 + k4);
  return true;
}

// One Dormand-Prince 5(4) step in space and time (stage times tau + c h, c = 0, 1/5, 3/10, 4/5, 8/9, 1, 1):
// next is the fifth-order solution, error the norm of its difference to the embedded fourth-order one
// (the local error estimate an adaptive step size is chosen from).
template <typename TimeSampler>
HEADRACE_HD bool rk45_step_in_time(const TimeSampler& sample, Vec3 p, float tau, float h, Vec3& next, float& error) {
  Vec3 k1, k2, k3, k4, k5, k6, k7;
  if (!sample(p, tau, k1)) return false;
  if (!sample(p + h * ((1.0f / 5) * k1), tau + h * (1.0f / 5), k2)) return false;
  if (!sample(p + h * ((3.0f / 40) * k1 + (9.0f / 40) * k2), tau + h * (3.0f / 10), k3)) return false;
  if (!sample(p + h * ((44.0f / 45) * k1 - (56.0f / 15) * k2 + (32.0f / 9) * k3), tau + h * (4.0f / 5), k4)) return false;
  if (!sample(p + h * ((19372.0f / 6561) * k1 - (25360.0f / 2187) * k2 + (64448.0f / 6561) * k3 - (212.0f / 729) * k4),
              tau + h * (8.0f / 9), k5))
    return false;
  if (!sample(p + h * ((9017.0f / 3168) * k1 - (355.0f / 33) * k2 + (46732.0f / 5247) * k3 + (49.0f / 176) * k4 -
                       (5103.0f / 18656) * k5),
              tau + h, k6))
    return false;
  const Vec3 fifth = p + h * ((35.0f / 384) * k1 + (500.0f / 1113) * k3 + (125.0f / 192) * k4 - (2187.0f / 6784) * k5 +
                              (11.0f / 84) * k6);
  if (!sample(fifth, tau + h, k7)) return false;
  const Vec3 fourth = p + h * ((5179.0f / 57600) * k1 + (7571.0f / 16695) * k3 + (393.0f / 640) * k4 -
                               (92097.0f / 339200) * k5 + (187.0f / 2100) * k6 + (1.0f / 40) * k7);
  next = fifth;
  error = length(fifth - fourth);
  return true;
}

// A steady field's sampler `bool(const Vec3& point, Vec3& velocity)` seen as one in time (the time unused).
template <typename Sampler>
struct Steady {
  const Sampler& field;
  HEADRACE_HD bool operator()(const Vec3& p, float, Vec3& velocity) const { return field(p, velocity); }
};

// The same steps through a steady field (streamlines): the positions' arithmetic is the steps' in time.
template <typename Sampler>
HEADRACE_HD bool rk4_step(const Sampler& sample, Vec3 p, float h, Vec3& next) {
  return rk4_step_in_time(Steady<Sampler>{sample}, p, 0.0f, h, next);
}

template <typename Sampler>
HEADRACE_HD bool rk45_step(const Sampler& sample, Vec3 p, float h, Vec3& next, float& error) {
  return rk45_step_in_time(Steady<Sampler>{sample}, p, 0.0f, h, next, error);
}

}  // namespace headrace::workloads::streamlines
