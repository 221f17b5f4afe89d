// The CPU reference of the sphere renderer: the depth and colour passes of sphere_glyphs_shared.hpp over
// host memory, batch by batch, on CPU threads. The GPU renderer is checked against its images, and
// `headrace render --device cpu` draws with it on a machine without a GPU.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "headrace/workloads/particles/glyph_look.hpp"

namespace headrace::workloads::particles {

class ReferenceRenderer {
 public:
  // background: RGBA8, r in the low byte. threads: 0 = one per core.
  ReferenceRenderer(const Camera& camera, std::uint32_t background, unsigned threads = 0);

  // Draws a batch whose first particle is number first_index of the frame (indices break depth ties).
  // scalars: the frame's per-particle values when the look colours by them.
  void draw(std::span<const Particle> batch, std::uint32_t first_index, const float* scalars = nullptr);
  // Back to the background, every depth empty.
  void clear();
  // From the next clear on: another camera (the frame buffer follows its size) or look.
  void set_camera(const Camera& camera);
  void set_look(const GlyphLook& look);

  [[nodiscard]] const Camera& camera() const noexcept { return camera_; }
  // Row-major RGBA8, top row first.
  [[nodiscard]] const std::vector<std::uint32_t>& image() const noexcept { return rgba_; }
  // Each pixel's depth key (empty_key where nothing was drawn), row-major like image().
  [[nodiscard]] const std::vector<std::uint64_t>& keys() const noexcept { return keys_; }

 private:
  Camera camera_;
  std::uint32_t background_;
  unsigned threads_;
  GlyphLook look_;
  std::vector<std::uint64_t> keys_;
  std::vector<std::uint32_t> rgba_;
};

}  // namespace headrace::workloads::particles
