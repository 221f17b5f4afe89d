// Cameras for the sphere renderer: look-at (eye, target, up) and an orbit around a target, both with a
// vertical field of view and the image's size (the aspect ratio follows from it).
#pragma once

#include <cstdint>

#include "headrace/workloads/particles/sphere_glyphs_shared.hpp"

namespace headrace::workloads::particles {

// Throws UsageError for an image of no pixels, a field of view outside (0, 180) degrees, an eye on
// the target, or an up direction along the line of sight.
[[nodiscard]] Camera look_at(Vec3 eye, Vec3 target, Vec3 up, float fov_y_degrees, std::int32_t width, std::int32_t height);

// The eye `distance` from target, `azimuth` degrees around the y axis (0: on +z) and `elevation`
// degrees above the xz plane, y up; elevation within (-90, 90).
[[nodiscard]] Camera orbit(Vec3 target, float distance, float azimuth_degrees, float elevation_degrees,
                           float fov_y_degrees, std::int32_t width, std::int32_t height);

}  // namespace headrace::workloads::particles
