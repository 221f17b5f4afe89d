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

// Sort-last: per pixel, an image (keys, rgba) merged with `others` more (other_keys, other_rgba: `stride`
// pixels apart) into the first `pixels` of out_rgba, and of out_keys when a later round merges again;
// out may be the first image itself.
extern "C" __global__ void headrace_depth_merge(const std::uint64_t* keys, const std::uint32_t* rgba, const std::uint64_t* other_keys,
                                                const std::uint32_t* other_rgba, std::int32_t others, std::uint64_t stride,
                                                std::uint64_t pixels, std::uint64_t* out_keys, std::uint32_t* out_rgba) {
  const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= pixels) return;
  std::uint64_t key = keys[i];
  std::uint32_t colour = rgba[i];
  for (std::int32_t k = 0; k < others; ++k) hp::depth_merge(key, colour, other_keys[i + stride * k], other_rgba[i + stride * k]);
  if (out_keys != nullptr) out_keys[i] = key;
  out_rgba[i] = colour;
}
