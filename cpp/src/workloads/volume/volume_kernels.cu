// The volume renderer's kernels (volume_shared.hpp holds the math, shared with the CPU reference). Built
// into a fatbin by nvcc and loaded through the driver at run time.
#include "headrace/workloads/volume/volume_shared.hpp"

namespace hv = headrace::workloads::volume;

namespace {

constexpr int range_warps = 8;  // regions a block at once, a warp each

}  // namespace

// One warp per region (grid-stride over regions): the warp's lanes share the cells of the region's
// bricks, each keeps its own min and max, and the warp reduces them by shuffles, so no global atomics
// (seed 003, section 7), no shared memory or block barrier, and no lane walks a whole brick alone. A
// region is tens to thousands of cells: a block of its own each left most of the block idle and paid a
// barrier a region. Minima and maxima do not depend on the order: the CPU's ranges, bit for bit.
extern "C" __global__ void __launch_bounds__(range_warps * 32)
    headrace_volume_ranges(hv::VolumeView v, hv::ValueRange* out, unsigned long long regions) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned long long warps = static_cast<unsigned long long>(gridDim.x) * range_warps;
  for (unsigned long long region = static_cast<unsigned long long>(blockIdx.x) * range_warps + threadIdx.x / 32; region < regions;
       region += warps) {
    const int rx = static_cast<int>(region % v.regions[0]);
    const int ry = static_cast<int>((region / v.regions[0]) % v.regions[1]);
    const int rz = static_cast<int>(region / (static_cast<unsigned long long>(v.regions[0]) * v.regions[1]));
    const hv::Vec3 lower = hv::region_corner(v, rx, ry, rz), upper = hv::region_corner(v, rx + 1, ry + 1, rz + 1);
    float lo = 3.0e38f, hi = -3.0e38f;
    for (unsigned k = v.region_first[region]; k < v.region_first[region + 1]; ++k) {
      const hv::BrickRecord b = v.bricks[v.region_bricks[k]];
      int clo[3], chi[3];
      hv::tent_cells(b, lower, upper, clo, chi);
      const int nx = chi[0] - clo[0] + 1, ny = chi[1] - clo[1] + 1, nz = chi[2] - clo[2] + 1;
      if (nx <= 0 || ny <= 0 || nz <= 0) continue;
      const unsigned cells = static_cast<unsigned>(nx) * ny * nz;
      for (unsigned c = lane; c < cells; c += 32) {
        const int x = clo[0] + static_cast<int>(c % nx), y = clo[1] + static_cast<int>((c / nx) % ny),
                  z = clo[2] + static_cast<int>(c / (static_cast<unsigned>(nx) * ny));
        const float s = v.scalars[b.first_cell + x + static_cast<unsigned long long>(b.size[0]) * (y + static_cast<unsigned long long>(b.size[1]) * z)];
        lo = fminf(lo, s), hi = fmaxf(hi, s);
      }
    }
    for (int offset = 16; offset > 0; offset /= 2) {
      lo = fminf(lo, __shfl_xor_sync(0xffffffffu, lo, offset));
      hi = fmaxf(hi, __shfl_xor_sync(0xffffffffu, hi, offset));
    }
    if (lane == 0) out[region] = hv::ValueRange{lo, hi};
  }
}

extern "C" __global__ void headrace_volume_classify(hv::VolumeView v, const hv::ValueRange* ranges, unsigned char* visible,
                                                    unsigned long long regions) {
  const unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < regions) visible[i] = hv::classify(v, ranges[i]);
}

extern "C" __global__ void headrace_volume_render(hv::VolumeView v, hv::Camera camera, unsigned* rgba) {
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x), y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x < camera.width && y < camera.height) rgba[x + static_cast<long long>(camera.width) * y] = hv::render_pixel(v, camera, x, y);
}

// Sort-last: the premultiplied colour and opacity of each pixel over the renderer's slab (4 floats a pixel).
extern "C" __global__ void headrace_volume_render_layer(hv::VolumeView v, hv::Camera camera, float* rgba) {
  const int x = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x), y = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (x >= camera.width || y >= camera.height) return;
  const hv::Shaded acc = hv::march(v, camera, x, y);
  reinterpret_cast<float4*>(rgba)[x + static_cast<long long>(camera.width) * y] = make_float4(acc.r, acc.g, acc.b, acc.a);
}

// Sort-last: `count` slabs' layers of a band of rows (premultiplied RGBA, `stride` floats apart, in slab
// order along z) composited front to back over the background (composite_slabs): `pixels` pixels from
// row first_row of the camera's image.
extern "C" __global__ void headrace_volume_composite(const float* layers, std::int32_t count, std::uint64_t stride, hv::Camera camera,
                                                     std::int32_t first_row, std::uint64_t pixels, unsigned background, unsigned* out) {
  const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= pixels) return;
  const auto x = static_cast<std::int32_t>(i % static_cast<std::uint64_t>(camera.width));
  const auto y = first_row + static_cast<std::int32_t>(i / static_cast<std::uint64_t>(camera.width));
  out[i] = hv::over_background(hv::composite_slabs(layers + 4 * i, count, stride, camera.ray_z(x, y)), background);
}
