// One bind function per layer; module.cpp calls them in data-flow order.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "headrace/gpu/cuda_driver.hpp"
#include "headrace/workloads/common/camera.hpp"
#include "headrace/workloads/common/frame_buffer.hpp"

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
// The workloads: what every renderer shares (imaging.cpp), then one file a workload.
void bind_imaging(nanobind::module_& m);
void bind_particles(nanobind::module_& m);
void bind_streamlines(nanobind::module_& m);
void bind_volume(nanobind::module_& m);

// A CUDA stream as Python passes it: its handle as an integer (0: the default stream).
inline gpu::CUstream cuda_stream(std::uintptr_t handle) { return reinterpret_cast<gpu::CUstream>(handle); }

using workloads::common::CameraSpec;
// A NumPy array of `shape` and element type As over the memory of `values`, which it owns (freed with
// the array; moved in, not copied): As is T, or what a T is made of (a Vec3 as 3 floats, records as bytes).
template <typename As, typename T, typename Allocator>
nanobind::ndarray<nanobind::numpy, As> owned_array_as(std::vector<T, Allocator>&& values, std::initializer_list<std::size_t> shape) {
  using Values = std::vector<T, Allocator>;
  auto* heap = new Values(std::move(values));
  nanobind::capsule owner(heap, [](void* p) noexcept { delete static_cast<Values*>(p); });
  return nanobind::ndarray<nanobind::numpy, As>(reinterpret_cast<As*>(heap->data()), shape.size(), shape.begin(), owner);
}
// A NumPy array of `shape` that owns `values` (freed with the array).
template <typename T, typename Allocator>
nanobind::ndarray<nanobind::numpy, T> owned_array(std::vector<T, Allocator>&& values, std::initializer_list<std::size_t> shape) {
  return owned_array_as<T>(std::move(values), shape);
}
// Row-major RGBA8 pixels as a (height, width, 4) uint8 array.
[[nodiscard]] nanobind::ndarray<nanobind::numpy, std::uint8_t> image_array(std::vector<std::uint32_t>&& rgba,
                                                                           const workloads::common::Camera& camera);
// The same over a pooled frame (workloads::common::FramePool), which the array holds while it lives.
[[nodiscard]] nanobind::ndarray<nanobind::numpy, std::uint8_t> image_array(workloads::common::FramePool::Buffer&& rgba,
                                                                           const workloads::common::Camera& camera);
}  // namespace headrace::python

void bind_io(nanobind::module_& m);
void bind_probe(nanobind::module_& m);
