// The sphere renderer's kernels, one thread per particle for the passes (sphere_glyphs_shared.hpp
// holds the work, shared with the CPU reference), one per pixel for clearing. Built into a fatbin by
// nvcc and loaded through the driver at run time.
#include "headrace/workloads/particles/sphere_glyphs_shared.hpp"

namespace hp = headrace::workloads::particles;

extern "C" __global__ void headrace_sphere_depth(hp::Camera camera, hp::GlyphStyle style, const hp::Particle* batch,
                                                 std::uint32_t count, std::uint32_t first_index, std::uint64_t* keys) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) hp::depth_pass(camera, batch[i], first_index + i, keys, style);
}

extern "C" __global__ void headrace_sphere_color(hp::Camera camera, hp::GlyphStyle style, const hp::Particle* batch,
                                                 std::uint32_t count, std::uint32_t first_index, const std::uint64_t* keys,
                                                 std::uint32_t* rgba) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) hp::color_pass(camera, batch[i], first_index + i, keys, rgba, style);
}

extern "C" __global__ void headrace_clear_frame(std::uint64_t* keys, std::uint32_t* rgba, std::uint64_t pixels,
                                                std::uint32_t background) {
  const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < pixels) {
    keys[i] = hp::empty_key;
    rgba[i] = background;
  }
}
