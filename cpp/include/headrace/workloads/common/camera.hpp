// The camera every renderer draws through: a pinhole (HEADRACE_HD, so kernels and CPU references cast
// the same rays), made by look-at (eye, target, up) or an orbit around a target, both with a vertical
// field of view and the image's size (the aspect ratio follows from it).
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "headrace/detail/host_device.hpp"
#include "headrace/detail/vec3.hpp"

namespace headrace::workloads::common {

using headrace::detail::Vec3;

// Pixel (px, py), py down, looks along forward + ((px + 0.5) * 2 / width - 1) * right
// + (1 - (py + 0.5) * 2 / height) * up, where right and up are scaled by the half field of view.
struct Camera {
  Vec3 eye, forward, right, up;
  std::int32_t width = 1, height = 1;

  [[nodiscard]] HEADRACE_HD Vec3 ray(std::int32_t px, std::int32_t py) const {
    const float sx = (2.0f * (static_cast<float>(px) + 0.5f)) / static_cast<float>(width) - 1.0f;
    const float sy = 1.0f - (2.0f * (static_cast<float>(py) + 0.5f)) / static_cast<float>(height);
    return normalized(forward + sx * right + sy * up);
  }
  // The z of ray()'s direction before it is normalised: its sign, for a fraction of the work.
  [[nodiscard]] HEADRACE_HD float ray_z(std::int32_t px, std::int32_t py) const {
    const float sx = (2.0f * (static_cast<float>(px) + 0.5f)) / static_cast<float>(width) - 1.0f;
    const float sy = 1.0f - (2.0f * (static_cast<float>(py) + 0.5f)) / static_cast<float>(height);
    return forward.z + sx * right.z + sy * up.z;
  }
  // Screen position (in pixels, fractional) of a point in front of the camera; false behind it.
  HEADRACE_HD bool project(Vec3 p, float& px, float& py) const {
    const Vec3 d = p - eye;
    const float depth = dot(d, forward);
    if (!(depth > 0.0f)) return false;
    const float sx = dot(d, right) / (dot(right, right) * depth);
    const float sy = dot(d, up) / (dot(up, up) * depth);
    px = (sx + 1.0f) * 0.5f * static_cast<float>(width);
    py = (1.0f - sy) * 0.5f * static_cast<float>(height);
    return true;
  }
  // The image's pixels (and a frame buffer's entries).
  [[nodiscard]] HEADRACE_HD std::uint64_t pixels() const {
    return static_cast<std::uint64_t>(width) * static_cast<std::uint64_t>(height);
  }
};

// Throws UsageError for an image of no pixels, a field of view outside (0, 180) degrees, an eye on
// the target, or an up direction along the line of sight.
[[nodiscard]] Camera look_at(Vec3 eye, Vec3 target, Vec3 up, float fov_y_degrees, std::int32_t width, std::int32_t height);

// The eye `distance` from target, `azimuth` degrees around the y axis (0: on +z) and `elevation`
// degrees above the xz plane, y up; elevation within (-90, 90).
[[nodiscard]] Camera orbit(Vec3 target, float distance, float azimuth_degrees, float elevation_degrees,
                           float fov_y_degrees, std::int32_t width, std::int32_t height);

// A camera as a caller describes it: an orbit (distance, azimuth, elevation) around target, or eye,
// target, up; made by camera_of (orbit when given, else look_at).
struct CameraSpec {
  std::array<float, 3> eye, target, up;
  std::optional<std::array<float, 3>> orbit;
  float fov_y_degrees;
  std::int32_t width, height;
};
[[nodiscard]] Camera camera_of(const CameraSpec& spec);

}  // namespace headrace::workloads::common
