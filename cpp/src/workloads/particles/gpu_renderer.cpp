#include "headrace/workloads/particles/gpu_renderer.hpp"

#include "headrace/error.hpp"
#include "headrace/gpu/stream.hpp"
#include "sphere_kernel_image.hpp"

namespace headrace::workloads::particles {
namespace {

constexpr unsigned block_threads = 128;

}  // namespace

GpuRenderer::GpuRenderer(int device, const Camera& camera, std::uint32_t background)
    : device_(device),
      module_((device_.make_current(), sphere_kernel_image()), "the sphere renderer's kernels (sphere_glyphs.cu)",
              "render with --device cpu"),
      depth_(module_.function("headrace_sphere_depth")),
      color_(module_.function("headrace_sphere_color")),
      clear_(module_.function("headrace_clear_frame")),
      camera_(camera),
      background_(background),
      keys_(static_cast<std::size_t>(camera.width) * camera.height * sizeof(std::uint64_t)),
      rgba_(static_cast<std::size_t>(camera.width) * camera.height * sizeof(std::uint32_t)) {
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

void GpuRenderer::draw(gpu::CUdeviceptr batch, std::uint64_t count, std::uint32_t first_index, gpu::CUstream stream) {
  HEADRACE_EXPECT(count <= UINT32_MAX, UsageError, "a batch holds at most 2^32 - 1 particles");
  device_.make_current();
  Camera camera = camera_;
  const auto* particles = reinterpret_cast<const Particle*>(batch);
  auto n = static_cast<std::uint32_t>(count);
  auto* keys = reinterpret_cast<std::uint64_t*>(keys_.pointer());
  auto* rgba = reinterpret_cast<std::uint32_t*>(rgba_.pointer());
  void* depth_args[] = {&camera, &particles, &n, &first_index, &keys};
  gpu::launch_1d(depth_, count, block_threads, stream, depth_args);
  void* color_args[] = {&camera, &particles, &n, &first_index, &keys, &rgba};
  gpu::launch_1d(color_, count, block_threads, stream, color_args);
}

std::vector<std::uint32_t> GpuRenderer::image(gpu::CUstream stream) const {
  device_.make_current();
  gpu::check(gpu::require_driver().cuStreamSynchronize(stream), "cuStreamSynchronize");
  std::vector<std::uint32_t> pixels(rgba_.size_bytes() / sizeof(std::uint32_t));
  gpu::copy_to_host(pixels.data(), rgba_.pointer(), rgba_.size_bytes());
  return pixels;
}

}  // namespace headrace::workloads::particles
