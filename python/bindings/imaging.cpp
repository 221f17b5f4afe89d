// workloads layer, what every renderer shares: camera specs and images (headrace.imaging).
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>

#include "bindings.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace headrace::python {

nb::ndarray<nb::numpy, std::uint8_t> image_array(std::vector<std::uint32_t>&& rgba, const workloads::common::Camera& camera) {
  // The pixels' own memory, read as bytes (RGBA in memory order): a frame's read-back allocates and copies once.
  return owned_array_as<std::uint8_t>(std::move(rgba),
                                      {static_cast<std::size_t>(camera.height), static_cast<std::size_t>(camera.width), 4});
}

nb::ndarray<nb::numpy, std::uint8_t> image_array(workloads::common::FramePool::Buffer&& rgba, const workloads::common::Camera& camera) {
  auto* held = new workloads::common::FramePool::Buffer(std::move(rgba));
  nb::capsule owner(held, [](void* p) noexcept { delete static_cast<workloads::common::FramePool::Buffer*>(p); });
  const std::size_t shape[3] = {static_cast<std::size_t>(camera.height), static_cast<std::size_t>(camera.width), 4};
  return nb::ndarray<nb::numpy, std::uint8_t>(reinterpret_cast<std::uint8_t*>(held->get()), 3, shape, owner);
}

void bind_imaging(nb::module_& m) {
  nb::class_<CameraSpec>(m, "CameraSpec", "A camera: orbit (distance, azimuth, elevation) around target, or eye/target/up.")
      .def(nb::init<std::array<float, 3>, std::array<float, 3>, std::array<float, 3>, std::optional<std::array<float, 3>>,
                    float, std::int32_t, std::int32_t>(),
           "eye"_a, "target"_a, "up"_a, "orbit"_a, "fov_y_degrees"_a, "width"_a, "height"_a);
}

}  // namespace headrace::python
