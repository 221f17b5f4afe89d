// Three floats and the vector algebra on them, for math shared by CUDA kernels and their CPU
// references (HEADRACE_HD): the streamline tracer and the sphere renderer.
#pragma once

#include <cmath>

#include "headrace/detail/host_device.hpp"

namespace headrace::detail {

struct Vec3 {
  float x = 0, y = 0, z = 0;
};

HEADRACE_HD inline Vec3 operator+(Vec3 a, Vec3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
HEADRACE_HD inline Vec3 operator-(Vec3 a, Vec3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
HEADRACE_HD inline Vec3 operator*(float s, Vec3 a) { return {s * a.x, s * a.y, s * a.z}; }
HEADRACE_HD inline float dot(Vec3 a, Vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
HEADRACE_HD inline float length(Vec3 a) { return sqrtf(dot(a, a)); }
HEADRACE_HD inline Vec3 cross(Vec3 a, Vec3 b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
HEADRACE_HD inline Vec3 normalized(Vec3 a) { return (1.0f / length(a)) * a; }

}  // namespace headrace::detail
