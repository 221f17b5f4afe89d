// The sphere renderer on a GPU: the passes of sphere_glyphs_shared.hpp as kernels (sphere_glyphs.cu)
// over a frame buffer in GPU memory, issued on the caller's stream. Its images equal the CPU
// reference's (the same math, rounded alike), which the tests check.
#pragma once

#include <cstdint>
#include <vector>

#include "headrace/gpu/device.hpp"
#include "headrace/gpu/kernel_module.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/workloads/common/frame_buffer.hpp"
#include "headrace/workloads/particles/glyph_look.hpp"

namespace headrace::workloads::particles {

class GpuRenderer {
 public:
  // Starts cleared. Throws UnavailableError without a GPU or without the kernels (a build without nvcc).
  GpuRenderer(int device, const Camera& camera, std::uint32_t background);

  // Every pixel back to the background and an empty depth.
  void clear(gpu::CUstream stream);
  // Both passes over `count` particles at `batch` (device memory), the first being number first_index
  // of the frame; asynchronous on stream. scalars: the frame's per-particle values when the look
  // colours by them (device memory, indexed by number in the frame).
  void draw(gpu::CUdeviceptr batch, std::uint64_t count, std::uint32_t first_index, gpu::CUstream stream,
            gpu::CUdeviceptr scalars = 0);
  // From the next clear on: another camera (the frame buffer follows its size) or look.
  void set_camera(const Camera& camera);
  void set_look(const GlyphLook& look);
  // Waits for stream, then copies the image (row-major RGBA8, top row first).
  [[nodiscard]] std::vector<std::uint32_t> image(gpu::CUstream stream) const;
  // The same into memory the renderer recycles once every holder lets go (a series' images on their way to
  // the writers); reserve_images makes `count` of them ahead.
  [[nodiscard]] common::FramePool::Buffer image_pooled(gpu::CUstream stream) const;
  void reserve_images(std::size_t count) const;
  // Waits for stream, then copies each pixel's depth key (depth_key; empty_key where nothing was drawn):
  // what sort-last compositing of several renderers' images compares.
  [[nodiscard]] std::vector<std::uint64_t> keys(gpu::CUstream stream) const;

  // The frame buffer in GPU memory (keys, then colours), for sort-last compositing on the GPU.
  [[nodiscard]] gpu::CUdeviceptr keys_pointer() const noexcept { return keys_.pointer(); }
  [[nodiscard]] gpu::CUdeviceptr image_pointer() const noexcept { return rgba_.pointer(); }

  [[nodiscard]] const Camera& camera() const noexcept { return camera_; }
  [[nodiscard]] int device() const noexcept { return device_.ordinal(); }
  // Makes its GPU's context current on the calling thread (before allocating beside it).
  void make_current() const { device_.make_current(); }

 private:
  gpu::Device device_;
  gpu::KernelModule module_;
  gpu::CUfunction depth_, color_, clear_;
  Camera camera_;
  std::uint32_t background_;
  GlyphLook look_;
  gpu::DeviceBuffer keys_, rgba_, table_;
  mutable common::FrameReadBack read_back_;  // the frame buffer's way home
};

}  // namespace headrace::workloads::particles
