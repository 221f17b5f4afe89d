#include "headrace/workloads/particles/reference_renderer.hpp"

#include <algorithm>

#include "headrace/detail/parallel_for.hpp"

namespace headrace::workloads::particles {

ReferenceRenderer::ReferenceRenderer(const Camera& camera, std::uint32_t background, unsigned threads)
    : camera_(camera),
      background_(background),
      threads_(threads),
      keys_(static_cast<std::size_t>(camera.width) * camera.height, empty_key),
      rgba_(keys_.size(), background) {}

void ReferenceRenderer::draw(std::span<const Particle> batch, std::uint32_t first_index) {
  // Every key of the batch before any colour: the colour pass needs the batch's winners.
  headrace::detail::parallel_for(batch.size(), threads_, [&](std::uint64_t i) {
    depth_pass(camera_, batch[i], first_index + static_cast<std::uint32_t>(i), keys_.data());
  });
  headrace::detail::parallel_for(batch.size(), threads_, [&](std::uint64_t i) {
    color_pass(camera_, batch[i], first_index + static_cast<std::uint32_t>(i), keys_.data(), rgba_.data());
  });
}

void ReferenceRenderer::clear() {
  std::fill(keys_.begin(), keys_.end(), empty_key);
  std::fill(rgba_.begin(), rgba_.end(), background_);
}

}  // namespace headrace::workloads::particles
