#include "headrace/workloads/particles/gpu_renderer.hpp"

#include "headrace/error.hpp"
#include "headrace/gpu/stream.hpp"
#include "headrace/workloads/common/frame_buffer.hpp"
#include "sphere_kernel_image.hpp"

namespace headrace::workloads::particles {
namespace {

constexpr unsigned block_threads = 128;

}  // namespace

GpuRenderer::GpuRenderer(int device, const Camera& camera, std::uint32_t background)
    : device_(device),
      module_((device_.make_current(), sphere_kernel_image()), "the sphere renderer's kernels (sphere_glyphs.cu)",
              "render on the CPU instead"),
      depth_(module_.function("headrace_sphere_depth")),
      color_(module_.function("headrace_sphere_color")),
      clear_(module_.function("headrace_clear_frame")),
      camera_(camera),
      background_(background),
      keys_(camera.pixels() * sizeof(std::uint64_t)),
      rgba_(camera.pixels() * sizeof(std::uint32_t)) {
  const gpu::Stream stream;
  clear(stream.handle());
  stream.synchronize();
}

void GpuRenderer::clear(gpu::CUstream stream) {
  device_.make_current();
  auto* keys = reinterpret_cast<std::uint64_t*>(keys_.pointer());
  auto* rgba = reinterpret_cast<std::uint32_t*>(rgba_.pointer());
  std::uint64_t pixels = rgba_.size_bytes() / sizeof(std::uint32_t);
  std::uint32_t background = background_;
  void* args[] = {&keys, &rgba, &pixels, &background};
  gpu::launch_1d(clear_, pixels, 256, stream, args);
}

void GpuRenderer::draw(gpu::CUdeviceptr batch, std::uint64_t count, std::uint32_t first_index, gpu::CUstream stream,
                       gpu::CUdeviceptr scalars) {
  HEADRACE_EXPECT(count <= UINT32_MAX, UsageError, "a batch holds at most 2^32 - 1 particles");
  HEADRACE_EXPECT(look_.colour_by != colour_from_scalars || scalars != 0, UsageError,
                  "the look colours by a per-particle field: draw needs the frame's values of it");
  device_.make_current();
  Camera camera = camera_;
  GlyphStyle style{look_.radius_scale, look_.colour_by, reinterpret_cast<const float*>(table_.pointer()),
                   reinterpret_cast<const float*>(scalars), look_.lo, look_.hi};
  const auto* particles = reinterpret_cast<const Particle*>(batch);
  auto n = static_cast<std::uint32_t>(count);
  auto* keys = reinterpret_cast<std::uint64_t*>(keys_.pointer());
  auto* rgba = reinterpret_cast<std::uint32_t*>(rgba_.pointer());
  void* depth_args[] = {&camera, &style, &particles, &n, &first_index, &keys};
  gpu::launch_1d(depth_, count, block_threads, stream, depth_args);
  void* color_args[] = {&camera, &style, &particles, &n, &first_index, &keys, &rgba};
  gpu::launch_1d(color_, count, block_threads, stream, color_args);
}

void GpuRenderer::set_camera(const Camera& camera) {
  if (camera.pixels() != camera_.pixels()) {
    device_.make_current();
    keys_ = gpu::DeviceBuffer(camera.pixels() * sizeof(std::uint64_t));
    rgba_ = gpu::DeviceBuffer(camera.pixels() * sizeof(std::uint32_t));
  }
  camera_ = camera;
}

void GpuRenderer::set_look(const GlyphLook& look) {
  check_glyph_look(look);
  if (!look.table.empty()) {
    device_.make_current();
    if (table_.size_bytes() != look.table.size() * sizeof(float)) table_ = gpu::DeviceBuffer(look.table.size() * sizeof(float));
    gpu::copy_to_device(table_.pointer(), look.table.data(), look.table.size() * sizeof(float));
  }
  look_ = look;
}

std::vector<std::uint32_t> GpuRenderer::image(gpu::CUstream stream) const {
  return read_back_.read<std::uint32_t>(device_, rgba_, camera_.pixels(), stream);
}

common::FramePool::Buffer GpuRenderer::image_pooled(gpu::CUstream stream) const {
  return read_back_.read_pooled<std::uint32_t>(device_, rgba_, camera_.pixels(), stream);
}

void GpuRenderer::reserve_images(std::size_t count) const { read_back_.reserve<std::uint32_t>(camera_.pixels(), count); }

std::vector<std::uint64_t> GpuRenderer::keys(gpu::CUstream stream) const {
  return read_back_.read<std::uint64_t>(device_, keys_, camera_.pixels(), stream);
}

}  // namespace headrace::workloads::particles
