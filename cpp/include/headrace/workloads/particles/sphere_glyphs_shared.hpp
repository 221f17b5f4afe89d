// Sphere glyphs (seed 000, section 3): every particle (x, y, z, radius, r, g, b, a) is a sphere ray-cast
// in the screen rectangle its bounding box projects to, with a correct depth and headlight shading.
// HEADRACE_HD: the CUDA kernels and the CPU reference renderer run this very code.
//
// A frame is drawn batch by batch in two passes per batch, so that batches can arrive in any grouping
// and the image is still the same: the depth pass keeps, per pixel, the smallest key (ray depth bits
// << 32 | particle index) with an atomic min; the colour pass lets the one particle whose key won so
// far write the pixel's colour. A later batch with a nearer sphere wins the key and overwrites the
// colour; one with none never writes. Ties go to the lower index, so every order gives the same image.
#pragma once

#include <cstdint>
#include <cstring>

#include "headrace/detail/host_device.hpp"
#include "headrace/detail/vec3.hpp"
#include "headrace/workloads/common/camera.hpp"
#include "headrace/workloads/common/colour_map.hpp"

namespace headrace::workloads::particles {

using common::Camera;
using headrace::detail::Vec3;

// Seed 000's particle record: 32 bytes.
struct Particle {
  float x, y, z, radius, r, g, b, a;
};
static_assert(sizeof(Particle) == 32);

// The light: ambient plus diffuse from the eye (a headlight), plus a white highlight.
inline constexpr float ambient = 0.25f, diffuse = 0.75f, specular = 0.3f;

// Pixels [x0, x1) x [y0, y1) that can show the sphere: its bounding box's corners projected, clipped
// to the image. False when the sphere is off-screen or any corner is behind the eye (the eye inside or
// right beside a sphere: not drawn).
struct PixelRect {
  std::int32_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

[[nodiscard]] HEADRACE_HD inline bool screen_rect(const Camera& camera, const Particle& s, PixelRect& rect) {
  float lo_x = 3.0e38f, lo_y = 3.0e38f, hi_x = -3.0e38f, hi_y = -3.0e38f;
  for (int corner = 0; corner < 8; ++corner) {
    const Vec3 p{s.x + ((corner & 1) ? s.radius : -s.radius), s.y + ((corner & 2) ? s.radius : -s.radius),
                 s.z + ((corner & 4) ? s.radius : -s.radius)};
    float px = 0, py = 0;
    if (!camera.project(p, px, py)) return false;
    lo_x = fminf(lo_x, px), hi_x = fmaxf(hi_x, px), lo_y = fminf(lo_y, py), hi_y = fmaxf(hi_y, py);
  }
  rect.x0 = static_cast<std::int32_t>(fmaxf(0.0f, floorf(lo_x)));
  rect.y0 = static_cast<std::int32_t>(fmaxf(0.0f, floorf(lo_y)));
  rect.x1 = static_cast<std::int32_t>(fminf(static_cast<float>(camera.width), ceilf(hi_x) + 1.0f));
  rect.y1 = static_cast<std::int32_t>(fminf(static_cast<float>(camera.height), ceilf(hi_y) + 1.0f));
  return rect.x0 < rect.x1 && rect.y0 < rect.y1;
}

// Distance along the pixel's ray to the sphere's front surface; false when the ray misses it. The
// ray's closest approach to the centre, not b^2 - c, so that small spheres far away stay exact.
[[nodiscard]] HEADRACE_HD inline bool hit_sphere(const Camera& camera, const Particle& s, std::int32_t px,
                                                 std::int32_t py, float& t) {
  const Vec3 dir = camera.ray(px, py);
  const Vec3 to_centre = Vec3{s.x, s.y, s.z} - camera.eye;
  const float along = dot(to_centre, dir);
  const Vec3 off = to_centre - along * dir;
  const float miss2 = s.radius * s.radius - dot(off, off);
  if (!(miss2 >= 0.0f)) return false;
  t = along - sqrtf(miss2);
  return t > 0.0f;
}

// The colour of the sphere where the pixel's ray meets it at distance t, as RGBA8 (r in the low byte).
[[nodiscard]] HEADRACE_HD inline std::uint32_t shade(const Camera& camera, const Particle& s, std::int32_t px,
                                                     std::int32_t py, float t) {
  const Vec3 dir = camera.ray(px, py);
  const Vec3 hit = camera.eye + t * dir;
  const Vec3 normal = (1.0f / s.radius) * (hit - Vec3{s.x, s.y, s.z});
  const float facing = fmaxf(0.0f, -dot(normal, dir));
  const float light = ambient + diffuse * facing;
  const float f2 = facing * facing, f4 = f2 * f2, f8 = f4 * f4, f16 = f8 * f8;
  const float highlight = specular * f16 * f16;
  auto channel = [&](float c) {
    const float v = fminf(1.0f, c * light + highlight);
    return static_cast<std::uint32_t>(fmaxf(0.0f, v) * 255.0f + 0.5f);
  };
  const std::uint32_t alpha = static_cast<std::uint32_t>(fminf(1.0f, fmaxf(0.0f, s.a)) * 255.0f + 0.5f);
  return channel(s.r) | (channel(s.g) << 8) | (channel(s.b) << 16) | (alpha << 24);
}

// How glyphs are drawn beyond their records (the viewer's controls): radii scaled, and the colour taken
// from the record (colour_by == colour_stored) or from a scalar through a colour table: one of the
// record's x, y, z, radius (colour_by 0..3) or a per-particle array of the frame (colour_from_scalars),
// indexed by the particle's number in its frame. Pointers are device memory in kernels, host memory on
// the CPU. The default draws the records as they are.
inline constexpr std::int32_t colour_stored = -1, colour_from_scalars = 8;
struct GlyphStyle {
  float radius_scale = 1.0f;
  std::int32_t colour_by = colour_stored;
  const float* table = nullptr;    // common::colour_map_entries RGBA, straight colour
  const float* scalars = nullptr;  // colour_from_scalars: one per particle of the frame
  float lo = 0.0f, hi = 1.0f;      // the scalar range the table spans
};

// The record as the style draws it: radius scaled, colour from the table (the record's opacity kept).
// A scalar outside [lo, hi] takes the end colour; NaN the first.
[[nodiscard]] HEADRACE_HD inline Particle styled(const Particle& s, std::uint32_t index, const GlyphStyle& style) {
  Particle p = s;
  p.radius *= style.radius_scale;
  if (style.colour_by == colour_stored) return p;
  float value = 0.0f;
  switch (style.colour_by) {
    case 0: value = s.x; break;
    case 1: value = s.y; break;
    case 2: value = s.z; break;
    case 3: value = s.radius; break;
    default: value = style.scalars[index]; break;
  }
  const float* rgba = style.table + 4 * common::colour_map_entry(value, style.lo, style.hi);
  p.r = rgba[0], p.g = rgba[1], p.b = rgba[2];
  return p;
}

// Nearer first, then the lower index: t > 0, so its IEEE bits order as the floats do.
[[nodiscard]] HEADRACE_HD inline std::uint64_t depth_key(float t, std::uint32_t index) {
  std::uint32_t bits = 0;
  memcpy(&bits, &t, sizeof bits);
  return (static_cast<std::uint64_t>(bits) << 32) | index;
}
inline constexpr std::uint64_t empty_key = ~std::uint64_t{0};

namespace detail {
HEADRACE_HD inline void atomic_min(std::uint64_t* where, std::uint64_t value) {
#if defined(__CUDA_ARCH__)
  atomicMin(reinterpret_cast<unsigned long long*>(where), static_cast<unsigned long long>(value));
#else
  std::uint64_t seen = __atomic_load_n(where, __ATOMIC_RELAXED);
  while (value < seen && !__atomic_compare_exchange_n(where, &seen, value, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
#endif
}
}  // namespace detail

// The depth pass of one particle: its key into every pixel it covers, if nearer.
HEADRACE_HD inline void depth_pass(const Camera& camera, const Particle& record, std::uint32_t index, std::uint64_t* keys,
                                   const GlyphStyle& style = {}) {
  const Particle s = styled(record, index, style);
  PixelRect rect;
  if (!screen_rect(camera, s, rect)) return;
  for (std::int32_t py = rect.y0; py < rect.y1; ++py)
    for (std::int32_t px = rect.x0; px < rect.x1; ++px) {
      float t = 0;
      if (hit_sphere(camera, s, px, py, t))
        detail::atomic_min(keys + static_cast<std::uint64_t>(py) * camera.width + px, depth_key(t, index));
    }
}

// The colour pass of one particle: the pixels whose key it holds get its colour.
HEADRACE_HD inline void color_pass(const Camera& camera, const Particle& record, std::uint32_t index,
                                   const std::uint64_t* keys, std::uint32_t* rgba, const GlyphStyle& style = {}) {
  const Particle s = styled(record, index, style);
  PixelRect rect;
  if (!screen_rect(camera, s, rect)) return;
  for (std::int32_t py = rect.y0; py < rect.y1; ++py)
    for (std::int32_t px = rect.x0; px < rect.x1; ++px) {
      float t = 0;
      const std::uint64_t pixel = static_cast<std::uint64_t>(py) * camera.width + px;
      if (hit_sphere(camera, s, px, py, t) && keys[pixel] == depth_key(t, index)) rgba[pixel] = shade(camera, s, px, py, t);
    }
}

// Sort-last: one pixel of another renderer's image merged into this one's, the nearer key winning. Every
// renderer cleared to the same background, so where none drew the pixel stays the background; keys never
// tie across renderers (a particle is drawn by one).
HEADRACE_HD inline void depth_merge(std::uint64_t& key, std::uint32_t& colour, std::uint64_t other_key, std::uint32_t other_colour) {
  if (other_key < key) key = other_key, colour = other_colour;
}

}  // namespace headrace::workloads::particles
