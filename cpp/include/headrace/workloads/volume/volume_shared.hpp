// Direct volume rendering and iso-surfaces of block-structured AMR (seed 003; ExaBricks' data, Wald et al.
// 2020): the math the CUDA kernels (volume_kernels.cu) and the CPU reference renderer both run
// (HEADRACE_HD), so the tests compare the same code.
//
// Bricks hold leaf cells of one level each, scalars in brick order (a frame as stored). A sample at point p
// is the tent-basis reconstruction (Wald et al. 2017): every cell whose tent (one cell wide each side of its
// centre) covers p adds weight * value, so values blend smoothly across level boundaries with no T-junction.
// The domain is split into a uniform grid of regions, each listing the bricks whose tents reach into it
// (built once, as the topology never changes). Per frame each region's value range is recomputed (the
// cells whose tents reach into it: a conservative bound of every value reconstructed there), then each
// region is classified against the transfer function or iso value (the refit: the lists stay, only
// visibility changes). Rays step through the regions (3-D DDA), skip invisible ones and sample each
// visible one at a step set by its finest level (adaptive sampling), no finer than a pixel's footprint
// when asked.
#pragma once

#include <cstdint>

#include "headrace/detail/host_device.hpp"
#include "headrace/detail/vec3.hpp"
#include "headrace/workloads/common/camera.hpp"
#include "headrace/workloads/common/colour_map.hpp"

namespace headrace::workloads::volume {

using detail::Vec3;
using common::Camera;

// A brick as the renderer reads it: the world position of its lower corner, a cell's size, its size in
// cells and where its cells start in a frame.
struct BrickRecord {
  Vec3 lower;
  Vec3 cell;
  std::int32_t size[3] = {1, 1, 1};
  std::int32_t level = 0;
  std::uint64_t first_cell = 0;
};
static_assert(sizeof(BrickRecord) == 48);

struct ValueRange {
  float lo = 0, hi = 0;  // lo > hi: no cell reaches the region (empty)
};

// What a frame's image needs, as pointers into host memory (CPU) or device memory (GPU).
struct VolumeView {
  const BrickRecord* bricks = nullptr;
  const float* scalars = nullptr;          // the frame, brick order
  Vec3 domain_lower, domain_upper;         // rays are clipped to it
  Vec3 region_lower, region_size;          // the region grid
  std::int32_t regions[3] = {1, 1, 1};
  const std::uint32_t* region_first = nullptr;  // CSR: bricks of region r are region_bricks[first[r] .. first[r+1])
  const std::uint32_t* region_bricks = nullptr;
  const float* region_step = nullptr;      // a finest cell of the region: the step at one sample per cell
  float sampling = 1;                      // samples per region step (2: twice as many)
  // Half the largest cell edge of the region's bricks: a point this far inside a brick's box is reached
  // by no other brick's tents, so its own cells alone reconstruct it (the fast path of reconstruct()).
  const float* region_margin = nullptr;
  const std::uint8_t* region_visible = nullptr;  // this frame's classification
  const float* tf = nullptr;               // common::colour_map_entries RGBA, straight alpha per unit of base_step
  float tf_lo = 0, tf_hi = 1;              // the values tf spans
  float base_step = 1;                     // the step tf's opacities are stated for
  // >0: no step shorter than this many pixel footprints at the sample's distance (cells finer than a
  // pixel are not sampled more finely along the ray than across it); 0: the regions' steps alone.
  float footprint = 0;
  float iso = 0;
  std::int32_t iso_mode = 0;               // 0: DVR, 1: iso-surface
  std::int32_t skip_empty = 1;             // 0: every region with cells is drawn (to measure what skipping saves)
  std::uint32_t background = 0xff000000u;  // RGBA8, opaque black
  // Sort-last (RegionSlab, volume_topology.hpp): the region layers along z this renderer draws, [slab_first, slab_last);
  // the layer either side is its ghost, sampled only to carry a ray's state into the slab.
  std::int32_t slab_first = 0, slab_last = 1 << 30;
};

[[nodiscard]] HEADRACE_HD inline float min3(float a, float b, float c) { return fminf(a, fminf(b, c)); }
[[nodiscard]] HEADRACE_HD inline float max3(float a, float b, float c) { return fmaxf(a, fmaxf(b, c)); }
[[nodiscard]] HEADRACE_HD inline float component(Vec3 v, int axis) { return axis == 0 ? v.x : (axis == 1 ? v.y : v.z); }

[[nodiscard]] HEADRACE_HD inline std::int64_t region_index(const VolumeView& v, std::int32_t x, std::int32_t y, std::int32_t z) {
  return x + static_cast<std::int64_t>(v.regions[0]) * (y + static_cast<std::int64_t>(v.regions[1]) * z);
}

// The cells of brick b whose tents reach into [lower, upper] along each axis (inclusive ranges; lo > hi:
// none): cell i's centre is at lower + (i + 0.5) cell, its tent one cell each side. Conservative at the
// edges (a tent that touches counts), which a value range may be.
HEADRACE_HD inline void tent_cells(const BrickRecord& b, Vec3 lower, Vec3 upper, std::int32_t lo[3], std::int32_t hi[3]) {
  for (int axis = 0; axis < 3; ++axis) {
    const float origin = component(b.lower, axis), h = component(b.cell, axis);
    const float first = ceilf((component(lower, axis) - origin) / h - 1.5f);
    const float last = floorf((component(upper, axis) - origin) / h + 0.5f);
    lo[axis] = static_cast<std::int32_t>(fmaxf(first, 0.0f));
    hi[axis] = static_cast<std::int32_t>(fminf(last, static_cast<float>(b.size[axis] - 1)));
  }
}

[[nodiscard]] HEADRACE_HD inline Vec3 region_corner(const VolumeView& v, std::int32_t x, std::int32_t y, std::int32_t z) {
  return {v.region_lower.x + static_cast<float>(x) * v.region_size.x, v.region_lower.y + static_cast<float>(y) * v.region_size.y,
          v.region_lower.z + static_cast<float>(z) * v.region_size.z};
}

// The value range of one region, by one thread (the CPU reference; the GPU spreads the same cells over a
// block and reduces in shared memory: no global atomics).
[[nodiscard]] HEADRACE_HD inline ValueRange region_range(const VolumeView& v, std::int64_t region) {
  const std::int32_t rx = static_cast<std::int32_t>(region % v.regions[0]);
  const std::int32_t ry = static_cast<std::int32_t>((region / v.regions[0]) % v.regions[1]);
  const std::int32_t rz = static_cast<std::int32_t>(region / (static_cast<std::int64_t>(v.regions[0]) * v.regions[1]));
  const Vec3 lower = region_corner(v, rx, ry, rz), upper = region_corner(v, rx + 1, ry + 1, rz + 1);
  ValueRange range{3.0e38f, -3.0e38f};
  for (std::uint32_t k = v.region_first[region]; k < v.region_first[region + 1]; ++k) {
    const BrickRecord& b = v.bricks[v.region_bricks[k]];
    std::int32_t lo[3], hi[3];
    tent_cells(b, lower, upper, lo, hi);
    for (std::int32_t z = lo[2]; z <= hi[2]; ++z)
      for (std::int32_t y = lo[1]; y <= hi[1]; ++y)
        for (std::int32_t x = lo[0]; x <= hi[0]; ++x) {
          const float s = v.scalars[b.first_cell + x + static_cast<std::uint64_t>(b.size[0]) * (y + static_cast<std::uint64_t>(b.size[1]) * z)];
          range.lo = fminf(range.lo, s);
          range.hi = fmaxf(range.hi, s);
        }
  }
  return range;
}

[[nodiscard]] HEADRACE_HD inline int tf_bin(const VolumeView& v, float value) {
  return common::colour_map_entry(value, v.tf_lo, v.tf_hi);
}

// A region is visible when some value of its range has opacity (DVR) or its range holds the iso value.
[[nodiscard]] HEADRACE_HD inline std::uint8_t classify(const VolumeView& v, ValueRange range) {
  if (range.lo > range.hi) return 0;
  if (!v.skip_empty) return 1;
  if (v.iso_mode) return range.lo <= v.iso && v.iso <= range.hi;
  for (int bin = tf_bin(v, range.lo), last = tf_bin(v, range.hi); bin <= last; ++bin)
    if (v.tf[4 * bin + 3] > 0.0f) return 1;
  return 0;
}

// Adds the tents of brick b's cells that reach p (weight * value, weight); false when none can.
HEADRACE_HD inline bool add_tents(const VolumeView& v, const BrickRecord& b, Vec3 p, float& sum, float& weights) {
  const float u[3] = {(p.x - b.lower.x) / b.cell.x - 0.5f, (p.y - b.lower.y) / b.cell.y - 0.5f,
                      (p.z - b.lower.z) / b.cell.z - 0.5f};
  std::int32_t base[3];
  float f[3];
  for (int axis = 0; axis < 3; ++axis) {
    const float fl = floorf(u[axis]);
    base[axis] = static_cast<std::int32_t>(fl);
    f[axis] = u[axis] - fl;
    if (base[axis] < -1 || base[axis] >= b.size[axis]) return false;
  }
  for (int corner = 0; corner < 8; ++corner) {
    const std::int32_t x = base[0] + (corner & 1), y = base[1] + ((corner >> 1) & 1), z = base[2] + ((corner >> 2) & 1);
    if (x < 0 || y < 0 || z < 0 || x >= b.size[0] || y >= b.size[1] || z >= b.size[2]) continue;
    const float w = ((corner & 1) ? f[0] : 1.0f - f[0]) * (((corner >> 1) & 1) ? f[1] : 1.0f - f[1]) *
                    (((corner >> 2) & 1) ? f[2] : 1.0f - f[2]);
    if (w <= 0.0f) continue;
    sum += w * v.scalars[b.first_cell + x + static_cast<std::uint64_t>(b.size[0]) * (y + static_cast<std::uint64_t>(b.size[1]) * z)];
    weights += w;
  }
  return true;
}

// The tent-basis reconstruction at p from the bricks of p's region; false where no cell reaches p (a hole).
// A point deep enough inside one brick (the region's margin) takes that brick's tents alone: the other
// bricks' would all weigh 0, so the sum is the same, term for term, as over every brick of the region.
[[nodiscard]] HEADRACE_HD inline bool reconstruct(const VolumeView& v, Vec3 p, std::int64_t region, float& value) {
  float sum = 0, weights = 0;
  const std::uint32_t first = v.region_first[region], last = v.region_first[region + 1];
  const float margin = v.region_margin[region];
  bool alone = false;
  for (std::uint32_t k = first; k < last && !alone; ++k) {
    const BrickRecord& b = v.bricks[v.region_bricks[k]];
    if (p.x >= b.lower.x + margin && p.y >= b.lower.y + margin && p.z >= b.lower.z + margin &&
        p.x <= b.lower.x + static_cast<float>(b.size[0]) * b.cell.x - margin &&
        p.y <= b.lower.y + static_cast<float>(b.size[1]) * b.cell.y - margin &&
        p.z <= b.lower.z + static_cast<float>(b.size[2]) * b.cell.z - margin) {
      add_tents(v, b, p, sum, weights);
      alone = true;
    }
  }
  if (!alone)
    for (std::uint32_t k = first; k < last; ++k) add_tents(v, v.bricks[v.region_bricks[k]], p, sum, weights);
  if (!(weights > 0.0f)) return false;
  value = sum / weights;
  return true;
}

[[nodiscard]] HEADRACE_HD inline std::int32_t clamp_cell(float t, std::int32_t n) {
  return static_cast<std::int32_t>(fminf(fmaxf(floorf(t), 0.0f), static_cast<float>(n - 1)));
}

// The region holding p (clamped into the grid).
[[nodiscard]] HEADRACE_HD inline std::int64_t region_at(const VolumeView& v, Vec3 p) {
  return region_index(v, clamp_cell((p.x - v.region_lower.x) / v.region_size.x, v.regions[0]),
                      clamp_cell((p.y - v.region_lower.y) / v.region_size.y, v.regions[1]),
                      clamp_cell((p.z - v.region_lower.z) / v.region_size.z, v.regions[2]));
}

// Reconstruction anywhere in the domain (the gradient's samples may cross into the next region).
[[nodiscard]] HEADRACE_HD inline bool sample_at(const VolumeView& v, Vec3 p, float& value) {
  return reconstruct(v, p, region_at(v, p), value);
}

[[nodiscard]] HEADRACE_HD inline std::uint32_t pack_rgba(float r, float g, float b, float a) {
  auto byte = [](float c) { return static_cast<std::uint32_t>(fminf(fmaxf(c, 0.0f), 1.0f) * 255.0f + 0.5f); };
  return byte(r) | (byte(g) << 8) | (byte(b) << 16) | (byte(a) << 24);
}

// Slab test of the ray against a box: [t0, t1], false when it misses.
HEADRACE_HD inline bool clip_ray(Vec3 origin, Vec3 direction, Vec3 lower, Vec3 upper, float& t0, float& t1) {
  t0 = 0.0f, t1 = 3.0e38f;
  for (int axis = 0; axis < 3; ++axis) {
    const float o = component(origin, axis), d = component(direction, axis);
    const float inverse = 1.0f / d;  // +-inf along an axis the ray does not move on: the test still holds
    float near = (component(lower, axis) - o) * inverse, far = (component(upper, axis) - o) * inverse;
    if (near > far) {
      const float swap = near;
      near = far, far = swap;
    }
    if (near != near) near = -3.0e38f;  // 0 * inf for an origin on the slab's plane
    if (far != far) far = 3.0e38f;
    t0 = fmaxf(t0, near), t1 = fminf(t1, far);
  }
  return t0 < t1;
}

struct Shaded {
  float r = 0, g = 0, b = 0, a = 0;  // premultiplied colour and opacity gathered so far
};

// Front-to-back compositing of one DVR sample whose step is `step`: opacity corrected to the step.
HEADRACE_HD inline void composite(const VolumeView& v, float value, float step, Shaded& acc) {
  const float* entry = v.tf + 4 * tf_bin(v, value);
  const float alpha = 1.0f - powf(1.0f - fminf(entry[3], 0.999f), step / v.base_step);
  const float weight = (1.0f - acc.a) * alpha;
  acc.r += weight * entry[0], acc.g += weight * entry[1], acc.b += weight * entry[2], acc.a += weight;
}

// Headlight shading of an iso-surface hit at p: the gradient by central differences of the reconstruction.
HEADRACE_HD inline void shade_iso(const VolumeView& v, Vec3 p, Vec3 direction, float h, Shaded& acc) {
  float g[3];
  for (int axis = 0; axis < 3; ++axis) {
    Vec3 a = p, b = p;
    if (axis == 0) a.x -= h, b.x += h;
    if (axis == 1) a.y -= h, b.y += h;
    if (axis == 2) a.z -= h, b.z += h;
    float va = 0, vb = 0;
    const bool ha = sample_at(v, a, va), hb = sample_at(v, b, vb);
    g[axis] = (ha && hb) ? vb - va : 0.0f;
  }
  const Vec3 gradient{g[0], g[1], g[2]};
  const float norm = length(gradient);
  const float lambert = norm > 0.0f ? fabsf(dot(gradient, direction)) / norm : 1.0f;
  const float* entry = v.tf + 4 * tf_bin(v, v.iso);
  const float light = 0.25f + 0.75f * lambert;
  acc.r = light * entry[0], acc.g = light * entry[1], acc.b = light * entry[2], acc.a = 1.0f;
}

// One axis of the 3-D DDA over the region grid: the region along it, which way the ray goes, where it
// crosses the next region boundary and how far apart boundaries lie along the ray.
struct WalkAxis {
  std::int32_t cell = 0, step = 1;
  float next = 3.0e38f, delta = 3.0e38f;
};

[[nodiscard]] HEADRACE_HD inline WalkAxis walk_axis(float origin, float size, std::int32_t regions, float entry, float d, float t0) {
  WalkAxis w;
  w.cell = clamp_cell((entry - origin) / size, regions);
  w.step = d > 0.0f ? 1 : -1;
  const float boundary = origin + static_cast<float>(w.cell + (d > 0.0f ? 1 : 0)) * size;
  if (d != 0.0f) w.next = t0 + (boundary - entry) / d, w.delta = size / fabsf(d);
  return w;
}

// Steps to the next region along the axis; false once the ray leaves the grid.
HEADRACE_HD inline bool advance(WalkAxis& w, std::int32_t regions) {
  w.next += w.delta;
  w.cell += w.step;
  return w.cell >= 0 && w.cell < regions;
}

// One pixel's premultiplied colour and opacity: DVR or the first iso-surface crossing, through the visible
// regions of the renderer's slab (all of them when it has the whole grid) in ray order.
[[nodiscard]] HEADRACE_HD inline Shaded march(const VolumeView& v, const Camera& camera, std::int32_t px, std::int32_t py) {
  const Vec3 direction = camera.ray(px, py);
  Shaded acc;
  float t0 = 0, t1 = 0;
  if (!clip_ray(camera.eye, direction, v.domain_lower, v.domain_upper, t0, t1)) return acc;
  // Sort-last: every region outside the slab and its ghost holds nothing here and a region's samples lie
  // on its own lattice from t0 (below), so the ray starts where it enters the ghost instead of walking
  // every region in front of the slab.
  float start = t0;
  const std::int32_t ghost_first = v.slab_first - 1, ghost_last = v.slab_last + 1;
  if (ghost_first > 0 || ghost_last < v.regions[2]) {
    Vec3 lower = v.domain_lower, upper = v.domain_upper;
    if (ghost_first > 0) lower.z = fmaxf(lower.z, v.region_lower.z + static_cast<float>(ghost_first) * v.region_size.z);
    if (ghost_last < v.regions[2]) upper.z = fminf(upper.z, v.region_lower.z + static_cast<float>(ghost_last) * v.region_size.z);
    float s0 = 0, s1 = 0;
    if (!clip_ray(camera.eye, direction, lower, upper, s0, s1)) return acc;
    start = fmaxf(t0, s0);
  }
  // 3-D DDA over the region grid from the entry point (per-axis scalars, not arrays indexed by the
  // axis, so that a GPU keeps them in registers).
  const Vec3 entry = camera.eye + start * direction;
  WalkAxis wx = walk_axis(v.region_lower.x, v.region_size.x, v.regions[0], entry.x, direction.x, start);
  WalkAxis wy = walk_axis(v.region_lower.y, v.region_size.y, v.regions[1], entry.y, direction.y, start);
  WalkAxis wz = walk_axis(v.region_lower.z, v.region_size.z, v.regions[2], entry.z, direction.z, start);
  // The angle a pixel spans (camera.up is scaled by the tangent of half the field of view).
  const float footprint_step = v.footprint * 2.0f * length(camera.up) / static_cast<float>(camera.height);
  float t = start, previous_value = 0;
  bool have_previous = false;
  while (t < t1 && acc.a < 0.99f) {
    const bool drawn = wz.cell >= v.slab_first && wz.cell < v.slab_last;
    // Outside the slab, only while the ray still heads into it: the ghost layer, whose samples give an
    // iso-surface the value a crossing into the slab starts from.
    if (!drawn && !(direction.z > 0.0f ? wz.cell < v.slab_first : (direction.z < 0.0f && wz.cell >= v.slab_last))) break;
    const int axis = wx.next < wy.next ? (wx.next < wz.next ? 0 : 2) : (wy.next < wz.next ? 1 : 2);
    const float exit = fminf(axis == 0 ? wx.next : (axis == 1 ? wy.next : wz.next), t1);
    const std::int64_t region = region_index(v, wx.cell, wy.cell, wz.cell);
    const float dt = fmaxf(v.region_step[region] / v.sampling, footprint_step * fmaxf(t, 0.0f));
    if (v.region_visible[region] && (drawn || v.iso_mode)) {  // a DVR ray takes nothing from the ghost
      // A region's samples lie on its own lattice from where the ray entered the domain, whatever the
      // regions before it did: one renderer and a slab's (which starts at its ghost) sample alike.
      for (float sample_t = t0 + ceilf((t - t0) / dt) * dt; sample_t < exit && acc.a < 0.99f; sample_t += dt) {
        float value = 0;
        if (!reconstruct(v, camera.eye + sample_t * direction, region, value)) {
          have_previous = false;
          continue;
        }
        if (!drawn) {
          // The ghost's samples carry the previous value into the slab; its crossings are its owner's.
        } else if (!v.iso_mode) {
          composite(v, value, dt, acc);
        } else if (have_previous && (previous_value - v.iso) * (value - v.iso) <= 0.0f && previous_value != value) {
          // Refine the crossing between the two samples by the secant, then shade there.
          const float where = sample_t - dt * (value - v.iso) / (value - previous_value);
          shade_iso(v, camera.eye + where * direction, direction, 0.5f * dt, acc);
        }
        previous_value = value, have_previous = true;
      }
    } else {
      have_previous = false;
    }
    t = exit;
    if (!(axis == 0 ? advance(wx, v.regions[0]) : (axis == 1 ? advance(wy, v.regions[1]) : advance(wz, v.regions[2])))) break;
  }
  return acc;
}

// Premultiplied colour over an RGBA8 background, packed.
[[nodiscard]] HEADRACE_HD inline std::uint32_t over_background(const Shaded& acc, std::uint32_t background) {
  const float br = static_cast<float>(background & 0xffu) / 255.0f, bg = static_cast<float>((background >> 8) & 0xffu) / 255.0f,
              bb = static_cast<float>((background >> 16) & 0xffu) / 255.0f;
  return pack_rgba(acc.r + (1.0f - acc.a) * br, acc.g + (1.0f - acc.a) * bg, acc.b + (1.0f - acc.a) * bb, 1.0f);
}

[[nodiscard]] HEADRACE_HD inline std::uint32_t render_pixel(const VolumeView& v, const Camera& camera, std::int32_t px, std::int32_t py) {
  return over_background(march(v, camera, px, py), v.background);
}

// Front-to-back compositing of the slabs' layers of one pixel (premultiplied RGBA each, in slab order
// along z, `stride` floats apart): the ray meets them in that order when it heads up z, in the reverse
// order otherwise (slabs behind the eye hold nothing of it). A ray that is opaque (the renderer's 0.99)
// ends, as one renderer of the whole grid ends it.
[[nodiscard]] HEADRACE_HD inline Shaded composite_slabs(const float* layers, std::int32_t count, std::uint64_t stride, float direction_z) {
  Shaded acc;
  for (std::int32_t k = 0; k < count && acc.a < 0.99f; ++k) {
    const float* layer = layers + stride * static_cast<std::uint64_t>(direction_z >= 0.0f ? k : count - 1 - k);
    const float weight = 1.0f - acc.a;
    acc.r += weight * layer[0], acc.g += weight * layer[1], acc.b += weight * layer[2], acc.a += weight * layer[3];
  }
  return acc;
}

}  // namespace headrace::workloads::volume
