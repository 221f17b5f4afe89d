#include "headrace/workloads/particles/frame_session.hpp"

#include <algorithm>
#include <memory>
#include <string>

#include "headrace/error.hpp"

namespace headrace::workloads::particles {

FrameSession::FrameSession(const Camera& camera, std::uint32_t background, int device, unsigned threads) : camera_(camera) {
  if (device >= 0) {
    gpu_.emplace(device, camera_, background);
    segmented_.emplace(*gpu_);
  } else {
    cpu_.emplace(camera_, background, threads);
    segmented_.emplace(*cpu_);
  }
}

SegmentedRenderStats FrameSession::render(engine::Queue& queue, queue::FileId file, const format::Container& container,
                                          std::uint32_t frame, std::uint32_t field, const SegmentedRenderOptions& options) {
  return segmented_->render(queue, file, container, frame, field, options);
}

void FrameSession::clear(gpu::CUstream stream) {
  if (gpu_)
    gpu_->clear(stream);
  else
    cpu_->clear();
}

void FrameSession::draw_device(gpu::CUdeviceptr particles, std::uint64_t count, std::uint32_t first_index, gpu::CUstream stream,
                               gpu::CUdeviceptr scalars) {
  HEADRACE_EXPECT(gpu_.has_value(), UsageError, "draw_device draws on a GPU; this renderer is the CPU reference (draw_host)");
  gpu_->draw(particles, count, first_index, stream, scalars);
}

void FrameSession::draw_host(std::span<const Particle> batch, std::uint32_t first_index,
                             std::optional<std::span<const float>> scalars) {
  HEADRACE_EXPECT(!scalars || scalars->size() >= first_index + batch.size(), UsageError,
                  "scalars: one per particle of the frame, got " + std::to_string(scalars ? scalars->size() : 0));
  HEADRACE_EXPECT(cpu_.has_value(), UsageError, "draw_host draws with the CPU reference; this renderer is a GPU's (draw_device)");
  cpu_->draw(batch, first_index, scalars ? scalars->data() : nullptr);
}

void FrameSession::set_camera(const Camera& camera) {
  if (gpu_)
    gpu_->set_camera(camera);
  else
    cpu_->set_camera(camera);
  camera_ = camera;
}

void FrameSession::set_look(const GlyphLook& look) {
  if (gpu_)
    gpu_->set_look(look);
  else
    cpu_->set_look(look);
}

std::vector<std::uint32_t> FrameSession::image(gpu::CUstream stream) const { return gpu_ ? gpu_->image(stream) : cpu_->image(); }

common::FramePool::Buffer FrameSession::image_pooled(gpu::CUstream stream) const {
  if (gpu_) return gpu_->image_pooled(stream);
  auto copy = std::make_shared<std::vector<std::uint32_t>>(cpu_->image());
  return {copy, reinterpret_cast<std::byte*>(copy->data())};  // owned by the copy
}

void FrameSession::reserve_images(std::size_t count) const {
  if (gpu_) gpu_->reserve_images(count);
}

std::vector<std::uint64_t> FrameSession::keys(gpu::CUstream stream) const { return gpu_ ? gpu_->keys(stream) : cpu_->keys(); }

const GpuRenderer& FrameSession::gpu_renderer() const {
  HEADRACE_EXPECT(gpu_.has_value(), UsageError, "the CPU reference renderer draws into host memory, not a GPU's");
  return *gpu_;
}

std::vector<std::uint32_t> render_reference(std::span<const Particle> particles, const Camera& camera, std::uint32_t background,
                                            std::uint64_t batch_particles, unsigned threads) {
  HEADRACE_EXPECT(batch_particles > 0, UsageError, "batches need at least one particle");
  HEADRACE_EXPECT(particles.size() < (std::uint64_t{1} << 32), UsageError,
                  "a frame holds at most 2^32 - 1 particles, got " + std::to_string(particles.size()));
  ReferenceRenderer renderer(camera, background, threads);
  for (std::uint64_t first = 0; first < particles.size(); first += batch_particles)
    renderer.draw(particles.subspan(first, std::min<std::uint64_t>(batch_particles, particles.size() - first)),
                  static_cast<std::uint32_t>(first));
  return renderer.image();
}

}  // namespace headrace::workloads::particles
