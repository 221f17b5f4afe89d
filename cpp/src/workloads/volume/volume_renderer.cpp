#include "headrace/workloads/volume/volume_renderer.hpp"

#include <cmath>

#include "headrace/detail/parallel_for.hpp"
#include "headrace/error.hpp"
#include "headrace/gpu/stream.hpp"
#include "headrace/workloads/common/colour_map.hpp"
#include "headrace/workloads/common/frame_buffer.hpp"
#include "volume_kernel_image.hpp"

namespace headrace::workloads::volume {

void check_transfer_function(const TransferFunction& tf) {
  common::check_colour_map(tf.rgba, tf.lo, tf.hi, "a transfer function");
  for (float c : tf.rgba) HEADRACE_EXPECT(c >= 0.0f && c <= 1.0f, UsageError, "transfer function entries must lie in 0..1");
}

float default_base_step(const VolumeTopology& topology) {
  const auto& h = topology.layout().spacing;
  return static_cast<float>(0.5 * std::min({h[0], h[1], h[2]}));
}

namespace {

void fill_settings(VolumeView& v, const VolumeTopology& topology, const TransferFunction& tf, const RenderSettings& settings) {
  v.tf_lo = tf.lo, v.tf_hi = tf.hi;
  v.base_step = settings.base_step > 0 ? settings.base_step : default_base_step(topology);
  v.iso = settings.iso;
  v.iso_mode = settings.iso_mode ? 1 : 0;
  v.skip_empty = settings.skip_empty ? 1 : 0;
  v.sampling = settings.sampling;
  v.footprint = settings.footprint;
  v.background = settings.background;
}

void check_settings(const RenderSettings& settings) {
  HEADRACE_EXPECT(std::isfinite(settings.iso), UsageError, "the iso value must be finite");
  HEADRACE_EXPECT(settings.sampling > 0 && settings.sampling <= 64, UsageError, "sampling must be in (0, 64]");
  HEADRACE_EXPECT(settings.base_step >= 0 && std::isfinite(settings.base_step), UsageError, "base_step must be 0 or positive");
  HEADRACE_EXPECT(settings.footprint >= 0 && settings.footprint <= 64, UsageError, "footprint must be in 0..64");
}

}  // namespace

CpuVolumeRenderer::CpuVolumeRenderer(const VolumeTopology& topology, unsigned threads)
    : topology_(topology), threads_(threads) {}

VolumeView CpuVolumeRenderer::view(const float* scalars, const std::uint8_t* visible, const TransferFunction& tf,
                                   const RenderSettings& settings) const {
  VolumeView v = topology_.host_view();
  v.scalars = scalars;
  v.region_visible = visible;
  v.tf = tf.rgba.data();
  fill_settings(v, topology_, tf, settings);
  return v;
}

std::vector<ValueRange> CpuVolumeRenderer::ranges(std::span<const float> scalars) const {
  HEADRACE_EXPECT(scalars.size() == topology_.cell_count(), UsageError,
                  "a frame holds " + std::to_string(topology_.cell_count()) + " cells, got " + std::to_string(scalars.size()));
  VolumeView v = topology_.host_view();
  v.scalars = scalars.data();
  std::vector<ValueRange> out(topology_.region_count());
  constexpr std::uint64_t per_task = 256;
  detail::parallel_for((out.size() + per_task - 1) / per_task, threads_, [&](std::uint64_t task) {
    for (std::uint64_t r = task * per_task; r < std::min<std::uint64_t>(out.size(), (task + 1) * per_task); ++r)
      out[r] = region_range(v, static_cast<std::int64_t>(r));
  });
  return out;
}

std::vector<std::uint8_t> CpuVolumeRenderer::classify(std::span<const ValueRange> ranges, const TransferFunction& tf,
                                                      const RenderSettings& settings) const {
  check_transfer_function(tf);
  check_settings(settings);
  HEADRACE_EXPECT(ranges.size() == topology_.region_count(), UsageError, "one value range per region expected");
  const VolumeView v = view(nullptr, nullptr, tf, settings);
  std::vector<std::uint8_t> visible(ranges.size());
  for (std::size_t r = 0; r < ranges.size(); ++r) visible[r] = volume::classify(v, ranges[r]);
  return visible;
}

VolumeView CpuVolumeRenderer::checked_view(std::span<const float> scalars, std::span<const std::uint8_t> visible,
                                           const TransferFunction& tf, const RenderSettings& settings) const {
  check_transfer_function(tf);
  check_settings(settings);
  HEADRACE_EXPECT(scalars.size() == topology_.cell_count(), UsageError,
                  "a frame holds " + std::to_string(topology_.cell_count()) + " cells, got " + std::to_string(scalars.size()));
  HEADRACE_EXPECT(visible.size() == topology_.region_count(), UsageError, "one classification per region expected");
  return view(scalars.data(), visible.data(), tf, settings);
}

std::vector<std::uint32_t> CpuVolumeRenderer::render(std::span<const float> scalars, std::span<const std::uint8_t> visible,
                                                     const Camera& camera, const TransferFunction& tf,
                                                     const RenderSettings& settings) const {
  const VolumeView v = checked_view(scalars, visible, tf, settings);
  std::vector<std::uint32_t> rgba(camera.pixels());
  detail::parallel_for(static_cast<std::uint64_t>(camera.height), threads_, [&](std::uint64_t row) {
    const auto y = static_cast<std::int32_t>(row);
    for (std::int32_t x = 0; x < camera.width; ++x)
      rgba[static_cast<std::size_t>(x) + static_cast<std::size_t>(camera.width) * row] = render_pixel(v, camera, x, y);
  });
  return rgba;
}

std::vector<float> CpuVolumeRenderer::render_layer(std::span<const float> scalars, std::span<const std::uint8_t> visible,
                                                const Camera& camera, const TransferFunction& tf, const RenderSettings& settings) const {
  const VolumeView v = checked_view(scalars, visible, tf, settings);
  std::vector<float> rgba(camera.pixels() * 4);
  detail::parallel_for(static_cast<std::uint64_t>(camera.height), threads_, [&](std::uint64_t row) {
    const auto y = static_cast<std::int32_t>(row);
    for (std::int32_t x = 0; x < camera.width; ++x) {
      const Shaded acc = march(v, camera, x, y);
      float* out = rgba.data() + 4 * (static_cast<std::size_t>(x) + static_cast<std::size_t>(camera.width) * row);
      out[0] = acc.r, out[1] = acc.g, out[2] = acc.b, out[3] = acc.a;
    }
  });
  return rgba;
}

std::vector<std::uint32_t> composite_layers(std::span<const float> layers, std::uint32_t count, const Camera& camera,
                                            std::int32_t first_row, std::int32_t rows, std::uint32_t background, unsigned threads) {
  HEADRACE_EXPECT(count >= 1 && rows >= 0 && first_row >= 0 && first_row + rows <= camera.height, UsageError,
                  "layers of rows " + std::to_string(first_row) + ".." + std::to_string(first_row + rows) + " of an image " +
                      std::to_string(camera.height) + " rows high");
  const std::uint64_t pixels = static_cast<std::uint64_t>(camera.width) * static_cast<std::uint64_t>(rows);
  HEADRACE_EXPECT(layers.size() == pixels * 4 * count, UsageError,
                  std::to_string(count) + " layers of " + std::to_string(pixels) + " pixels hold " + std::to_string(pixels * 4 * count) +
                      " floats, got " + std::to_string(layers.size()));
  std::vector<std::uint32_t> rgba(pixels);
  detail::parallel_for(static_cast<std::uint64_t>(rows), threads, [&](std::uint64_t row) {
    for (std::int32_t x = 0; x < camera.width; ++x) {
      const std::uint64_t pixel = static_cast<std::uint64_t>(x) + static_cast<std::uint64_t>(camera.width) * row;
      const float direction_z = camera.ray_z(x, first_row + static_cast<std::int32_t>(row));
      rgba[pixel] = over_background(composite_slabs(layers.data() + 4 * pixel, static_cast<std::int32_t>(count), pixels * 4, direction_z),
                                    background);
    }
  });
  return rgba;
}

namespace {

template <typename T>
gpu::DeviceBuffer upload(std::span<const T> values, gpu::CUstream stream) {
  gpu::DeviceBuffer buffer(std::max<std::size_t>(values.size_bytes(), 4));
  if (!values.empty())
    gpu::check(gpu::require_driver().cuMemcpyHtoDAsync(buffer.pointer(), values.data(), values.size_bytes(), stream), "cuMemcpyHtoDAsync");
  return buffer;
}

constexpr unsigned classify_threads = 256;

}  // namespace

GpuVolumeRenderer::GpuVolumeRenderer(int device, const VolumeTopology& topology)
    : device_(device),
      module_((device_.make_current(), volume_kernel_image()), "the volume renderer's kernels (volume_kernels.cu)",
              "render on the CPU instead"),
      ranges_(module_.function("headrace_volume_ranges")),
      classify_(module_.function("headrace_volume_classify")),
      render_(module_.function("headrace_volume_render")),
      render_layer_(module_.function("headrace_volume_render_layer")),
      host_(topology.host_view()) {
  const gpu::Stream stream;
  bricks_ = upload(topology.bricks(), stream.handle());
  upload_regions(topology, stream.handle());
  stream.synchronize();
  base_step_ = default_base_step(topology);
}

void GpuVolumeRenderer::upload_regions(const VolumeTopology& topology, gpu::CUstream stream) {
  device_.make_current();
  host_ = topology.host_view();
  regions_ = topology.region_count();
  region_first_ = upload(topology.region_first(), stream);
  region_bricks_ = upload(topology.region_bricks(), stream);
  region_step_ = upload(topology.region_step(), stream);
  region_margin_ = upload(topology.region_margin(), stream);
  // The uploads read the topology's arrays, which its next rebuild replaces: finish them now.
  gpu::check(gpu::require_driver().cuStreamSynchronize(stream), "cuStreamSynchronize");
}

void GpuVolumeRenderer::set_transfer_function(const TransferFunction& tf, const RenderSettings& settings) {
  check_transfer_function(tf);
  check_settings(settings);
  device_.make_current();
  const gpu::Stream stream;
  tf_ = upload(std::span<const float>(tf.rgba), stream.handle());
  settings_ = settings;
  tf_lo_ = tf.lo, tf_hi_ = tf.hi;
  stream.synchronize();
}

GpuRegionState GpuVolumeRenderer::region_state() const {
  device_.make_current();
  return GpuRegionState{gpu::DeviceBuffer(std::max<std::uint64_t>(regions_, 1) * sizeof(ValueRange)),
                        gpu::DeviceBuffer(std::max<std::uint64_t>(regions_, 1))};
}

VolumeView GpuVolumeRenderer::view(gpu::CUdeviceptr scalars, const GpuRegionState* state) const {
  VolumeView v = host_;
  v.bricks = reinterpret_cast<const BrickRecord*>(bricks_.pointer());
  v.scalars = reinterpret_cast<const float*>(scalars);
  v.region_first = reinterpret_cast<const std::uint32_t*>(region_first_.pointer());
  v.region_bricks = reinterpret_cast<const std::uint32_t*>(region_bricks_.pointer());
  v.region_step = reinterpret_cast<const float*>(region_step_.pointer());
  v.region_margin = reinterpret_cast<const float*>(region_margin_.pointer());
  v.region_visible = state ? reinterpret_cast<const std::uint8_t*>(state->visible.pointer()) : nullptr;
  v.tf = reinterpret_cast<const float*>(tf_.pointer());
  v.tf_lo = tf_lo_, v.tf_hi = tf_hi_;
  v.base_step = settings_.base_step > 0 ? settings_.base_step : base_step_;
  v.iso = settings_.iso;
  v.iso_mode = settings_.iso_mode ? 1 : 0;
  v.skip_empty = settings_.skip_empty ? 1 : 0;
  v.sampling = settings_.sampling;
  v.footprint = settings_.footprint;
  v.background = settings_.background;
  return v;
}

void GpuVolumeRenderer::ranges(gpu::CUdeviceptr scalars, GpuRegionState& state, gpu::CUstream stream) {
  device_.make_current();
  VolumeView v = view(scalars, nullptr);
  auto* out = reinterpret_cast<ValueRange*>(state.ranges.pointer());
  unsigned long long regions = regions_;
  void* args[] = {&v, &out, &regions};
  constexpr std::uint64_t warps_a_block = 8;  // volume_kernels.cu's range_warps: a region a warp
  const auto blocks = static_cast<unsigned>(std::min<std::uint64_t>((regions_ + warps_a_block - 1) / warps_a_block, 1u << 20));
  gpu::check(gpu::require_driver().cuLaunchKernel(ranges_, std::max(blocks, 1u), 1, 1, warps_a_block * 32, 1, 1, 0, stream, args,
                                                  nullptr),
             "cuLaunchKernel(headrace_volume_ranges)");
}

void GpuVolumeRenderer::classify(GpuRegionState& state, gpu::CUstream stream) {
  HEADRACE_EXPECT(tf_.size_bytes() > 0, UsageError, "set a transfer function before classifying");
  device_.make_current();
  VolumeView v = view(0, nullptr);
  const auto* ranges = reinterpret_cast<const ValueRange*>(state.ranges.pointer());
  auto* visible = reinterpret_cast<unsigned char*>(state.visible.pointer());
  unsigned long long regions = regions_;
  void* args[] = {&v, &ranges, &visible, &regions};
  gpu::launch_1d(classify_, regions_, classify_threads, stream, args);
}

void GpuVolumeRenderer::launch_pixels(gpu::CUfunction kernel, const char* what, gpu::DeviceBuffer& out, std::size_t pixel_bytes,
                                      gpu::CUdeviceptr scalars, const GpuRegionState& state, const Camera& camera,
                                      gpu::CUstream stream) {
  HEADRACE_EXPECT(tf_.size_bytes() > 0, UsageError, "set a transfer function before rendering");
  HEADRACE_EXPECT(camera.width > 0 && camera.height > 0, UsageError, "an image needs pixels");
  device_.make_current();
  const std::size_t bytes = camera.pixels() * pixel_bytes;
  if (out.size_bytes() != bytes) out = gpu::DeviceBuffer(bytes);
  width_ = camera.width, height_ = camera.height;
  VolumeView v = view(scalars, &state);
  Camera c = camera;
  gpu::CUdeviceptr pixels = out.pointer();
  void* args[] = {&v, &c, &pixels};
  constexpr unsigned side = 8;  // a warp draws 8 x 4 pixels: their rays read nearby cells
  gpu::check(gpu::require_driver().cuLaunchKernel(kernel, (static_cast<unsigned>(camera.width) + side - 1) / side,
                                                  (static_cast<unsigned>(camera.height) + side - 1) / side, 1, side, side, 1, 0,
                                                  stream, args, nullptr),
             what);
}

void GpuVolumeRenderer::render(gpu::CUdeviceptr scalars, const GpuRegionState& state, const Camera& camera, gpu::CUstream stream) {
  launch_pixels(render_, "cuLaunchKernel(headrace_volume_render)", image_, sizeof(std::uint32_t), scalars, state, camera, stream);
}

void GpuVolumeRenderer::render_layer(gpu::CUdeviceptr scalars, const GpuRegionState& state, const Camera& camera, gpu::CUstream stream) {
  launch_pixels(render_layer_, "cuLaunchKernel(headrace_volume_render_layer)", layer_, 4 * sizeof(float), scalars, state, camera, stream);
}

std::vector<float> GpuVolumeRenderer::layer(gpu::CUstream stream) const {
  return read_back_.read<float>(device_, layer_, static_cast<std::size_t>(width_) * height_ * 4, stream);
}

std::vector<std::uint32_t> GpuVolumeRenderer::image(gpu::CUstream stream) const {
  return read_back_.read<std::uint32_t>(device_, image_, static_cast<std::size_t>(width_) * height_, stream);
}

std::vector<ValueRange> GpuVolumeRenderer::ranges_of(const GpuRegionState& state) const {
  device_.make_current();
  std::vector<ValueRange> out(regions_);
  gpu::copy_to_host(out.data(), state.ranges.pointer(), out.size() * sizeof(ValueRange));
  return out;
}

std::vector<std::uint8_t> GpuVolumeRenderer::visible_of(const GpuRegionState& state) const {
  device_.make_current();
  std::vector<std::uint8_t> out(regions_);
  gpu::copy_to_host(out.data(), state.visible.pointer(), out.size());
  return out;
}

}  // namespace headrace::workloads::volume
