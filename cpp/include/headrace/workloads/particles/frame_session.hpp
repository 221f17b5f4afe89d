// The particle workload's host-side session: one sphere renderer (a GPU's, or the CPU reference) and
// seed 000's streaming loop over it, kept across frames (the pipeline is set up once). What Python's
// renderer, viewer scene and sort-last ranks drive, through _ext.FrameRenderer.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "headrace/workloads/common/camera.hpp"
#include "headrace/workloads/common/frame_buffer.hpp"
#include "headrace/workloads/particles/segmented_render.hpp"

namespace headrace::workloads::particles {

class FrameSession {
 public:
  // device -1: the CPU reference on `threads` threads (0: one per core); else that GPU.
  FrameSession(const Camera& camera, std::uint32_t background, int device, unsigned threads = 0);

  // Seed 000's loop over one frame (the image cleared first): SegmentedRenderer::render.
  SegmentedRenderStats render(engine::Queue& queue, queue::FileId file, const format::Container& container, std::uint32_t frame,
                              std::uint32_t field, const SegmentedRenderOptions& options);

  // The peer's path (KvikIO into CuPy arrays) and the viewer's: the caller puts a frame or batch in memory
  // (GPU memory for a GPU renderer, host memory for the reference), the session draws it.
  // Back to the background (on `stream` for a GPU renderer).
  void clear(gpu::CUstream stream);
  // `count` particles in GPU memory at `particles`, the first number first_index of the frame, on
  // `stream`; scalars: the frame's per-particle values in GPU memory when the look colours by a field.
  // UsageError on the CPU reference.
  void draw_device(gpu::CUdeviceptr particles, std::uint64_t count, std::uint32_t first_index, gpu::CUstream stream,
                   gpu::CUdeviceptr scalars);
  // A batch in host memory, with the frame's per-particle values when the look colours by a field (one
  // per particle of the frame). UsageError on a GPU renderer.
  void draw_host(std::span<const Particle> batch, std::uint32_t first_index, std::optional<std::span<const float>> scalars);

  // From the next clear on (the streaming loop clears first); the image follows the camera's size.
  void set_camera(const Camera& camera);
  void set_look(const GlyphLook& look);

  // Row-major RGBA8 and each pixel's depth key (depth_key), once `stream` has finished.
  [[nodiscard]] std::vector<std::uint32_t> image(gpu::CUstream stream) const;
  // image() in memory a GPU renderer recycles (GpuRenderer::image_pooled; the CPU reference's is a copy of its
  // own); reserve_images makes `count` ahead on a GPU, and does nothing on the CPU.
  [[nodiscard]] common::FramePool::Buffer image_pooled(gpu::CUstream stream) const;
  void reserve_images(std::size_t count) const;
  [[nodiscard]] std::vector<std::uint64_t> keys(gpu::CUstream stream) const;
  [[nodiscard]] const Camera& camera() const noexcept { return camera_; }
  // The GPU renderer (sort-last compositing reads its frame buffer where it lies); UsageError on the CPU reference.
  [[nodiscard]] const GpuRenderer& gpu_renderer() const;

 private:
  Camera camera_;
  std::optional<GpuRenderer> gpu_;
  std::optional<ReferenceRenderer> cpu_;
  std::optional<SegmentedRenderer> segmented_;  // after the renderers it draws with: gone before them
};

// A frame of particles in host memory drawn by the CPU reference in batches of batch_particles (at most
// 2^32 - 1 particles): its image, row-major RGBA8.
[[nodiscard]] std::vector<std::uint32_t> render_reference(std::span<const Particle> particles, const Camera& camera,
                                                          std::uint32_t background, std::uint64_t batch_particles,
                                                          unsigned threads = 0);

}  // namespace headrace::workloads::particles
