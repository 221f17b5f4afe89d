#include "headrace/workloads/common/camera.hpp"

#include <cmath>
#include <string>

#include "headrace/error.hpp"

namespace headrace::workloads::common {

Camera look_at(Vec3 eye, Vec3 target, Vec3 up, float fov_y_degrees, std::int32_t width, std::int32_t height) {
  HEADRACE_EXPECT(width > 0 && height > 0, UsageError,
                  "an image needs pixels, got " + std::to_string(width) + " x " + std::to_string(height));
  HEADRACE_EXPECT(fov_y_degrees > 0 && fov_y_degrees < 180, UsageError,
                  "the field of view must lie in (0, 180) degrees, got " + std::to_string(fov_y_degrees));
  const Vec3 view = target - eye;
  HEADRACE_EXPECT(length(view) > 0, UsageError, "the camera's eye sits on its target");
  const Vec3 forward = normalized(view);
  const Vec3 side = cross(forward, up);
  HEADRACE_EXPECT(length(side) > 1e-6f * length(up), UsageError, "the camera's up direction lies along its line of sight");
  const float half_height = std::tan(fov_y_degrees * 3.14159265358979f / 360.0f);
  const float aspect = static_cast<float>(width) / static_cast<float>(height);
  Camera camera;
  camera.eye = eye;
  camera.forward = forward;
  camera.right = (half_height * aspect) * normalized(side);
  camera.up = half_height * normalized(cross(normalized(side), forward));
  camera.width = width;
  camera.height = height;
  return camera;
}

Camera orbit(Vec3 target, float distance, float azimuth_degrees, float elevation_degrees, float fov_y_degrees,
             std::int32_t width, std::int32_t height) {
  HEADRACE_EXPECT(distance > 0, UsageError, "an orbit needs a positive distance, got " + std::to_string(distance));
  HEADRACE_EXPECT(elevation_degrees > -90 && elevation_degrees < 90, UsageError,
                  "an orbit's elevation must lie in (-90, 90) degrees, got " + std::to_string(elevation_degrees));
  const float degree = 3.14159265358979f / 180.0f;
  const float az = azimuth_degrees * degree, el = elevation_degrees * degree;
  const Vec3 offset{distance * std::cos(el) * std::sin(az), distance * std::sin(el), distance * std::cos(el) * std::cos(az)};
  return look_at(target + offset, target, Vec3{0, 1, 0}, fov_y_degrees, width, height);
}

Camera camera_of(const CameraSpec& spec) {
  const Vec3 target{spec.target[0], spec.target[1], spec.target[2]};
  if (spec.orbit) return orbit(target, (*spec.orbit)[0], (*spec.orbit)[1], (*spec.orbit)[2], spec.fov_y_degrees, spec.width, spec.height);
  return look_at({spec.eye[0], spec.eye[1], spec.eye[2]}, target, {spec.up[0], spec.up[1], spec.up[2]}, spec.fov_y_degrees, spec.width,
                 spec.height);
}

}  // namespace headrace::workloads::common
