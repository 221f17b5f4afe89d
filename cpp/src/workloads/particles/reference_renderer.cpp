#include "headrace/workloads/particles/reference_renderer.hpp"

#include <algorithm>

#include "headrace/detail/parallel_for.hpp"
#include "headrace/error.hpp"

namespace headrace::workloads::particles {

ReferenceRenderer::ReferenceRenderer(const Camera& camera, std::uint32_t background, unsigned threads)
    : camera_(camera),
      background_(background),
      threads_(threads),
      keys_(camera.pixels(), empty_key),
      rgba_(keys_.size(), background) {}

void ReferenceRenderer::draw(std::span<const Particle> batch, std::uint32_t first_index, const float* scalars) {
  HEADRACE_EXPECT(look_.colour_by != colour_from_scalars || scalars != nullptr, UsageError,
                  "the look colours by a per-particle field: draw needs the frame's values of it");
  const GlyphStyle style{look_.radius_scale, look_.colour_by, look_.table.data(), scalars, look_.lo, look_.hi};
  // Every key of the batch before any colour: the colour pass needs the batch's winners.
  headrace::detail::parallel_for(batch.size(), threads_, [&](std::uint64_t i) {
    depth_pass(camera_, batch[i], first_index + static_cast<std::uint32_t>(i), keys_.data(), style);
  });
  headrace::detail::parallel_for(batch.size(), threads_, [&](std::uint64_t i) {
    color_pass(camera_, batch[i], first_index + static_cast<std::uint32_t>(i), keys_.data(), rgba_.data(), style);
  });
}

void ReferenceRenderer::set_camera(const Camera& camera) {
  keys_.assign(camera.pixels(), empty_key);
  rgba_.assign(camera.pixels(), background_);
  camera_ = camera;
}

void ReferenceRenderer::set_look(const GlyphLook& look) {
  check_glyph_look(look);
  look_ = look;
}

void ReferenceRenderer::clear() {
  std::fill(keys_.begin(), keys_.end(), empty_key);
  std::fill(rgba_.begin(), rgba_.end(), background_);
}

}  // namespace headrace::workloads::particles
