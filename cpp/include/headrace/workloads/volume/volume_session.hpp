// The volume workload's host-side session: the topology of one field of a container and the renderer over
// it (a GPU's, or the CPU reference), with the transfer function and settings every image uses. What
// Python's renderer, viewer scene and sort-last ranks drive, through _ext.VolumeRenderer.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "headrace/engine/queue.hpp"
#include "headrace/format/container.hpp"
#include "headrace/workloads/volume/animation.hpp"

namespace headrace::workloads::volume {

class VolumeSession {
 public:
  // device -1: the CPU reference on `threads` threads (0: one per core); else that GPU. The container
  // must outlive the session.
  VolumeSession(const format::Container& container, std::uint32_t field, int device, unsigned threads = 0,
                std::uint64_t most_regions = default_most_regions);

  // The transfer function and settings of every image from now on.
  void set_view(const TransferFunction& tf, const RenderSettings& settings);

  // A frame given in host memory (cell_count floats, brick order): each region's value range, its
  // classification under the view, its image.
  [[nodiscard]] std::vector<ValueRange> ranges(std::span<const float> scalars);
  [[nodiscard]] std::vector<std::uint8_t> visible(std::span<const float> scalars);
  [[nodiscard]] std::vector<std::uint32_t> image(std::span<const float> scalars, const Camera& camera);

  // The viewer's path: a frame resident where the renderer runs (a FrameStream's slot: GPU memory at
  // `scalars` for a GPU renderer, host memory for the reference). prepare: its value ranges and
  // classification, once per frame; classify: again after set_view; render: an image from any camera.
  void prepare_device(gpu::CUdeviceptr scalars, gpu::CUstream stream);
  void prepare_host(std::span<const float> scalars);
  void classify(gpu::CUstream stream);
  [[nodiscard]] std::vector<std::uint32_t> render_device(gpu::CUdeviceptr scalars, const Camera& camera, gpu::CUstream stream);
  [[nodiscard]] std::vector<std::uint32_t> render_host(std::span<const float> scalars, const Camera& camera);

  // Sort-last: from now on this session draws one slab of the grid (VolumeTopology::slab) from a frame
  // buffer of the runs it holds; a layer is the slab's premultiplied RGBA per pixel.
  void share_slab(RegionSlab slab, std::span<const ElementRun> held);
  [[nodiscard]] std::vector<float> render_layer_device(gpu::CUdeviceptr scalars, const Camera& camera, gpu::CUstream stream);
  // The same layer left in GPU memory (at layer_pointer()) for compositing on the GPU.
  void draw_layer_device(gpu::CUdeviceptr scalars, const Camera& camera, gpu::CUstream stream);
  [[nodiscard]] gpu::CUdeviceptr layer_pointer() const;
  [[nodiscard]] std::vector<float> render_layer_host(std::span<const float> scalars, const Camera& camera);

  // Seed 003's animation loop (options' field and view are the session's) and its render-only timing.
  [[nodiscard]] PlayResult play(engine::Queue* queue, PlayOptions options);
  [[nodiscard]] double render_only_seconds(const Camera& camera, std::uint32_t frame, unsigned repeats);

  [[nodiscard]] const VolumeTopology& topology() const noexcept { return topology_; }
  [[nodiscard]] int device() const noexcept { return gpu_ ? gpu_->device() : -1; }

 private:
  // A frame given in host memory, in GPU memory with its ranges (and classification) done on its stream.
  struct Resident;
  [[nodiscard]] Resident prepared(std::span<const float> scalars, bool classify);
  void expect_view() const;
  void expect_gpu() const;
  void expect_cpu(const char* call) const;
  void expect_prepared() const;
  void expect_cells(std::size_t cells) const;

  const format::Container& container_;
  std::uint32_t field_;
  VolumeTopology topology_;
  std::optional<GpuVolumeRenderer> gpu_;
  std::optional<CpuVolumeRenderer> cpu_;
  std::optional<TransferFunction> tf_;
  RenderSettings settings_;
  std::optional<GpuRegionState> resident_;  // the resident frame's ranges and classification (GPU)
  std::vector<ValueRange> host_ranges_;     // ... and on the CPU
  std::vector<std::uint8_t> host_visible_;
};

}  // namespace headrace::workloads::volume
