// One bind function per layer; module.cpp calls them in data-flow order.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "headrace/workloads/particles/sphere_glyphs_shared.hpp"

namespace headrace::python {
// Keyword arguments left as None keep the setting's default.
template <typename T>
void assign_if_given(T& target, const std::optional<T>& value) {
  if (value) target = *value;
}

// An options object's fields (its properties, nested options as dicts) and its repr from them.
nanobind::dict fields_dict(nanobind::handle self);
std::string fields_repr(nanobind::handle self);

void bind_errors(nanobind::module_& m);
void bind_format(nanobind::module_& m);
void bind_codec(nanobind::module_& m);
void bind_environment(nanobind::module_& m);
void bind_gpu(nanobind::module_& m);
void bind_queue(nanobind::module_& m);
void bind_workloads(nanobind::module_& m);
void bind_volume(nanobind::module_& m);

// A camera as Python describes it: an orbit (distance, azimuth, elevation) around target, or eye, target, up.
struct CameraSpec {
  std::array<float, 3> eye, target, up;
  std::optional<std::array<float, 3>> orbit;
  float fov_y_degrees;
  std::int32_t width, height;
};
[[nodiscard]] workloads::particles::Camera camera_of(const CameraSpec& spec);
// Row-major RGBA8 pixels as a (height, width, 4) uint8 array.
[[nodiscard]] nanobind::ndarray<nanobind::numpy, std::uint8_t> image_array(std::vector<std::uint32_t>&& rgba,
                                                                           const workloads::particles::Camera& camera);
}  // namespace headrace::python

void bind_io(nanobind::module_& m);
void bind_probe(nanobind::module_& m);
