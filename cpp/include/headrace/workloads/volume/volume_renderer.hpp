// The volume renderer of seed 003's pipeline: value ranges per region, classification (the refit) and
// ray marching (volume_shared.hpp), on CPU threads (the reference the tests hold the GPU to, and
// `--device cpu`) or as CUDA kernels (volume_kernels.cu) on the caller's streams.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "headrace/gpu/device.hpp"
#include "headrace/gpu/kernel_module.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/workloads/common/frame_buffer.hpp"
#include "headrace/workloads/volume/volume_topology.hpp"

namespace headrace::workloads::volume {

// A colour map (common/colour_map.hpp) of colour and opacity over [lo, hi]; opacity per base_step of ray (a sample at another
// step is corrected to it), so finer levels, sampled more finely, look the same.
struct TransferFunction {
  std::vector<float> rgba;  // common::colour_map_entries * 4, straight (not premultiplied) colour
  float lo = 0, hi = 1;
};

struct RenderSettings {
  bool iso_mode = false;
  float iso = 0;
  std::uint32_t background = 0xff000000u;
  float base_step = 0;  // 0: half the smallest level-0 cell edge
  float sampling = 1;   // samples per finest cell of a region (2: twice as many)
  bool skip_empty = true;  // false: draw every region that has cells (what empty-space skipping saves)
  float footprint = 0;     // >0: steps no shorter than this many pixel footprints (VolumeView::footprint)
};

// Throws UsageError for a table and range that are no colour map, or entries outside 0..1.
void check_transfer_function(const TransferFunction& tf);

class CpuVolumeRenderer {
 public:
  // threads: 0 = one per core. The topology must outlive the renderer.
  explicit CpuVolumeRenderer(const VolumeTopology& topology, unsigned threads = 0);

  // Every region's value range for a frame of cell_count scalars.
  [[nodiscard]] std::vector<ValueRange> ranges(std::span<const float> scalars) const;
  [[nodiscard]] std::vector<std::uint8_t> classify(std::span<const ValueRange> ranges, const TransferFunction& tf,
                                                   const RenderSettings& settings) const;
  // Row-major RGBA8, top row first.
  [[nodiscard]] std::vector<std::uint32_t> render(std::span<const float> scalars, std::span<const std::uint8_t> visible,
                                                  const Camera& camera, const TransferFunction& tf,
                                                  const RenderSettings& settings) const;
  // Sort-last: each pixel's premultiplied RGBA over the topology's slab (4 floats a pixel, no background).
  [[nodiscard]] std::vector<float> render_layer(std::span<const float> scalars, std::span<const std::uint8_t> visible,
                                                const Camera& camera, const TransferFunction& tf, const RenderSettings& settings) const;

 private:
  [[nodiscard]] VolumeView view(const float* scalars, const std::uint8_t* visible, const TransferFunction& tf,
                                const RenderSettings& settings) const;
  // view() of a frame and its classification, checked against the topology and the settings.
  [[nodiscard]] VolumeView checked_view(std::span<const float> scalars, std::span<const std::uint8_t> visible,
                                        const TransferFunction& tf, const RenderSettings& settings) const;
  const VolumeTopology& topology_;
  unsigned threads_;
};

// A frame's per-region state on the GPU: its value ranges and their classification. Players keep one per
// frame in flight, so the ranges of one frame are computed while another is drawn.
struct GpuRegionState {
  gpu::DeviceBuffer ranges, visible;
};

class GpuVolumeRenderer {
 public:
  // Uploads the topology (bricks and region lists). Throws UnavailableError without a GPU or kernels.
  GpuVolumeRenderer(int device, const VolumeTopology& topology);

  // Uploads the transfer function and settings used by classify() and render() from now on.
  void set_transfer_function(const TransferFunction& tf, const RenderSettings& settings);
  // Uploads the region lists again (after VolumeTopology::rebuild_regions: the baseline's rebuild).
  void upload_regions(const VolumeTopology& topology, gpu::CUstream stream);
  [[nodiscard]] GpuRegionState region_state() const;

  // Asynchronous on stream: ranges of the frame at `scalars` (cell_count floats in GPU memory) into state.
  void ranges(gpu::CUdeviceptr scalars, GpuRegionState& state, gpu::CUstream stream);
  void classify(GpuRegionState& state, gpu::CUstream stream);
  void render(gpu::CUdeviceptr scalars, const GpuRegionState& state, const Camera& camera, gpu::CUstream stream);
  // Waits for stream, then copies the last image (row-major RGBA8, top row first).
  [[nodiscard]] std::vector<std::uint32_t> image(gpu::CUstream stream) const;
  // Sort-last: the slab's premultiplied RGBA per pixel (CpuVolumeRenderer::render_layer), then its copy.
  void render_layer(gpu::CUdeviceptr scalars, const GpuRegionState& state, const Camera& camera, gpu::CUstream stream);
  [[nodiscard]] std::vector<float> layer(gpu::CUstream stream) const;
  // The layer in GPU memory (width x height premultiplied RGBA), for sort-last compositing on the GPU.
  [[nodiscard]] gpu::CUdeviceptr layer_pointer() const noexcept { return layer_.pointer(); }
  [[nodiscard]] std::vector<ValueRange> ranges_of(const GpuRegionState& state) const;
  [[nodiscard]] std::vector<std::uint8_t> visible_of(const GpuRegionState& state) const;

  [[nodiscard]] int device() const noexcept { return device_.ordinal(); }
  void make_current() const { device_.make_current(); }

 private:
  [[nodiscard]] VolumeView view(gpu::CUdeviceptr scalars, const GpuRegionState* state) const;
  // Launches `kernel` (VolumeView, Camera, pixels) over the camera's pixels into `out`, pixel_bytes each;
  // `what` names the launch in an error.
  void launch_pixels(gpu::CUfunction kernel, const char* what, gpu::DeviceBuffer& out, std::size_t pixel_bytes,
                     gpu::CUdeviceptr scalars, const GpuRegionState& state, const Camera& camera, gpu::CUstream stream);
  gpu::Device device_;
  gpu::KernelModule module_;
  gpu::CUfunction ranges_, classify_, render_, render_layer_;
  VolumeView host_;  // the topology's shape; pointers replaced by device ones
  std::uint64_t regions_ = 0;
  gpu::DeviceBuffer bricks_, region_first_, region_bricks_, region_step_, region_margin_, tf_, image_, layer_;
  mutable common::FrameReadBack read_back_;  // the frame buffer's way home
  RenderSettings settings_;
  float tf_lo_ = 0, tf_hi_ = 1, base_step_ = 1;
  std::int32_t width_ = 0, height_ = 0;
};

// Sort-last: the image of `rows` rows from `first_row` composited from `count` slabs' layers of those rows
// (count x rows x width premultiplied RGBA, in slab order along z) over the background, front to back in
// each ray's order (composite_slabs).
[[nodiscard]] std::vector<std::uint32_t> composite_layers(std::span<const float> layers, std::uint32_t count, const Camera& camera,
                                                          std::int32_t first_row, std::int32_t rows, std::uint32_t background,
                                                          unsigned threads = 0);

// Half the smallest level-0 cell edge: the step a transfer function's opacities are stated for by default.
[[nodiscard]] float default_base_step(const VolumeTopology& topology);

}  // namespace headrace::workloads::volume
