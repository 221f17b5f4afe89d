#include "headrace/workloads/particles/segmented_render.hpp"

#include <memory>
#include <string>
#include <variant>

#include "headrace/detail/aligned_buffer.hpp"
#include "headrace/detail/seconds.hpp"
#include "headrace/error.hpp"
#include "headrace/format/dtype.hpp"
#include "headrace/gpu/stream.hpp"

namespace headrace::workloads::particles {
namespace {

using Clock = headrace::detail::SteadyClock;
using headrace::detail::seconds_since;

void expect_particles(const format::Container& container, std::uint32_t frame, std::uint32_t field,
                      const SegmentedRenderOptions& options) {
  const std::string& path = container.path();
  HEADRACE_EXPECT(frame < container.frames().size(), UsageError,
                  path + ": no frame " + std::to_string(frame) + " (" + std::to_string(container.frames().size()) + " frames)");
  HEADRACE_EXPECT(field < container.fields().size(), UsageError, path + ": no field number " + std::to_string(field));
  const format::FieldInfo& info = container.fields()[field];
  HEADRACE_EXPECT(info.dtype == format::DType::float32 && info.components == 8, UsageError,
                  path + ": field '" + info.name + "' holds " + format::to_string(info.dtype) + " x " +
                      std::to_string(info.components) + ", expected float32 x 8 particles (x, y, z, radius, r, g, b, a)");
  HEADRACE_EXPECT(options.batch_particles > 0 && options.segments > 0, UsageError,
                  "batches need at least one particle and the buffer at least one segment");
}

// The reference renderer over host segments: a draw is done when it returns.
class HostTarget {
 public:
  explicit HostTarget(ReferenceRenderer& renderer) : renderer_(&renderer) {}

  // Segments for this frame, in the memory of the frames before when it is large enough.
  void prepare(std::uint64_t segment_bytes, std::uint64_t segments) {
    segment_bytes_ = segment_bytes;
    if (memory_.size_bytes() < segment_bytes * segments) memory_ = headrace::detail::AlignedBuffer(segment_bytes * segments);
    draws_.clear();
  }
  [[nodiscard]] queue::MemoryKind memory() const { return queue::MemoryKind::host; }
  [[nodiscard]] std::uintptr_t segment(std::uint64_t s) const {
    return reinterpret_cast<std::uintptr_t>(memory_.data() + s * segment_bytes_);
  }
  void clear() { renderer_->clear(); }
  void await_load(const queue::Queue& queue, queue::FenceId fence) { queue.wait(fence); }
  bool wait_for_segment(std::uint64_t) { return false; }
  void draw(std::uint64_t s, const ParticleBatch& batch) {
    const auto start = Clock::now();
    renderer_->draw({reinterpret_cast<const Particle*>(segment(s)), batch.particles},
                    static_cast<std::uint32_t>(batch.first_particle));
    draws_.push_back(seconds_since(start));
  }
  void segment_done(std::uint64_t) {}  // a host draw has ended when it returns
  void finish(SegmentedRenderStats& stats) { stats.batch_draw_seconds = std::move(draws_); }

 private:
  ReferenceRenderer* renderer_;
  std::uint64_t segment_bytes_ = 0;
  headrace::detail::AlignedBuffer memory_;
  std::vector<double> draws_;
};

// The GPU renderer over device segments: draws are kernels on our stream, which waits on each fence;
// a segment is free once the event recorded after its last draw has passed.
class DeviceTarget {
 public:
  explicit DeviceTarget(GpuRenderer& renderer) : renderer_((renderer.make_current(), &renderer)) {}
  DeviceTarget(const DeviceTarget&) = delete;
  DeviceTarget& operator=(const DeviceTarget&) = delete;
  // No kernel may still read the segments when they are freed (a frame that stopped on an error).
  ~DeviceTarget() {
    try {
      stream_.synchronize();
    } catch (const Error&) {  // a broken context: nothing left to wait for
    }
  }

  // Segments for this frame, in the memory of the frames before when it is large enough; a frame that
  // stopped on an error may have left draws running, so they finish before the memory is reused.
  void prepare(std::uint64_t segment_bytes, std::uint64_t segments) {
    renderer_->make_current();
    stream_.synchronize();
    segment_bytes_ = segment_bytes;
    if (memory_.size_bytes() < segment_bytes * segments) {
      memory_ = gpu::DeviceBuffer();  // the old buffer goes first: the two may not fit together
      memory_ = gpu::DeviceBuffer(segment_bytes * segments);
    }
    while (drawn_.size() < segments) drawn_.emplace_back();
    used_.assign(segments, false);
    draws_ = 0;
  }
  [[nodiscard]] queue::MemoryKind memory() const { return queue::MemoryKind::device; }
  [[nodiscard]] std::uintptr_t segment(std::uint64_t s) const { return memory_.pointer() + s * segment_bytes_; }
  void clear() { renderer_->clear(stream_.handle()); }
  void await_load(const queue::Queue& queue, queue::FenceId fence) {
    queue.wait_on_stream(fence, reinterpret_cast<std::uintptr_t>(stream_.handle()));
  }
  // True when the segment's last draw was still running (the load waits for it).
  bool wait_for_segment(std::uint64_t s) {
    if (!used_[s] || drawn_[s].query()) return false;
    drawn_[s].synchronize();
    return true;
  }
  void draw(std::uint64_t s, const ParticleBatch& batch) {
    if (draws_ == timings_.size()) timings_.push_back(std::make_unique<Timing>());
    Timing& timing = *timings_[draws_++];
    timing.start.record(stream_.handle());
    renderer_->draw(segment(s), batch.particles, static_cast<std::uint32_t>(batch.first_particle), stream_.handle());
    timing.end.record(stream_.handle());
  }
  // The segment is free once the stream gets here: after its draw, or, streaming alone, once its load has
  // arrived (the stream has waited on its fence); without this event the next load could land in the
  // segment while it is still drawn or filled.
  void segment_done(std::uint64_t s) {
    drawn_[s].record(stream_.handle());
    used_[s] = true;
  }
  void finish(SegmentedRenderStats& stats) {
    stream_.synchronize();
    for (std::size_t d = 0; d < draws_; ++d)
      stats.batch_draw_seconds.push_back(timings_[d]->end.elapsed_ms_since(timings_[d]->start) / 1e3);
  }

 private:
  struct Timing {
    gpu::Event start{true}, end{true};
  };
  GpuRenderer* renderer_;
  std::uint64_t segment_bytes_ = 0;
  gpu::DeviceBuffer memory_;
  gpu::Stream stream_;
  std::vector<gpu::Event> drawn_;
  std::vector<bool> used_;
  std::vector<std::unique_ptr<Timing>> timings_;  // reused frame after frame; the first draws_ are this frame's
  std::size_t draws_ = 0;
};

template <typename Target>
SegmentedRenderStats render_with(Target& target, queue::Queue& queue, queue::FileId file, const format::Container& container,
                                 std::uint32_t frame, std::uint32_t field, const SegmentedRenderOptions& options) {
  expect_particles(container, frame, field, options);
  const std::vector<ParticleBatch> batches = particle_batches(container, frame, field, options.batch_particles);
  const auto chunks = container.chunks_of(frame, field);
  const std::uint64_t first_chunk_number = container.frame_field(frame, field).first_chunk;
  const std::uint64_t n = batches.size();
  std::uint64_t largest = 0;
  for (const auto& batch : batches) largest = std::max(largest, batch.particles);
  const std::uint64_t segments = options.preload ? n : std::min<std::uint64_t>(options.segments, n);
  target.prepare(largest * sizeof(Particle), std::max<std::uint64_t>(segments, 1));

  // A frame that stops on an error cancels its other requests and waits for those in flight, so no
  // read lands in the segments after it returned.
  const std::uint64_t tag = reinterpret_cast<std::uintptr_t>(&target);
  struct StopLoads {
    queue::Queue& queue;
    std::uint64_t tag;
    ~StopLoads() {
      try {
        queue.cancel_tag(tag);
        queue.drain();
      } catch (const Error&) {  // the queue reports its own failures per request
      }
    }
  } stop_loads{queue, tag};

  SegmentedRenderStats stats;
  stats.batches = n;
  std::vector<std::vector<queue::RequestId>> requests(n);
  std::vector<queue::FenceId> fences(n);
  auto load = [&](std::uint64_t b, std::uint64_t s) {
    const ParticleBatch& batch = batches[b];
    for (std::uint64_t k = batch.first_chunk; k < batch.first_chunk + batch.chunk_count; ++k) {
      const format::ChunkInfo& chunk = chunks[k];
      const std::uintptr_t at = target.segment(s) + (chunk.first_element - batch.first_particle) * sizeof(Particle);
      queue::Request request = queue::chunk_request(file, chunk, {target.memory(), at, chunk.raw_size});
      request.label = queue::chunk_label(container, frame, field, first_chunk_number + k, chunk);
      request.tag = tag;
      requests[b].push_back(queue.enqueue(std::move(request)));
      stats.stored_bytes += chunk.stored_size;
    }
    fences[b] = queue.enqueue_signal();
    queue.submit();
  };
  // A failed read or decode stops the frame, naming its chunk; GPU decoding reports after the draw was
  // issued, so the frame is checked once more at the end and fails then, never returning its image.
  auto check = [&](std::uint64_t b) {
    for (const queue::RequestId id : requests[b]) {
      const queue::RequestStatus status = queue.status(id);
      if (status.state == queue::RequestState::failed || status.state == queue::RequestState::cancelled)
        throw Error("frame " + std::to_string(frame) + " stopped: " + status.message);
    }
  };

  target.clear();
  auto start = Clock::now();
  if (options.preload) {
    for (std::uint64_t b = 0; b < n; ++b) load(b, b);
    for (std::uint64_t b = 0; b < n; ++b) {
      queue.wait(fences[b]);
      check(b);
    }
    start = Clock::now();
    for (std::uint64_t b = 0; b < n && options.draw; ++b) target.draw(b, batches[b]);
  } else {
    for (std::uint64_t b = 0, next = 0; b < n; ++b) {
      for (; next < n && next < b + segments; ++next) {
        if (target.wait_for_segment(next % segments)) ++stats.segment_waits;
        load(next, next % segments);
      }
      target.await_load(queue, fences[b]);
      check(b);
      if (options.draw) target.draw(b % segments, batches[b]);
      target.segment_done(b % segments);
    }
  }
  target.finish(stats);
  stats.seconds = seconds_since(start);
  queue.drain();
  for (std::uint64_t b = 0; b < n; ++b) {
    check(b);
    for (const queue::RequestId id : requests[b]) stats.h2d_seconds += queue.status(id).h2d_s;
  }
  for (const auto& batch : batches) stats.particles += batch.particles;
  for (const double s : stats.batch_draw_seconds) stats.draw_seconds += s;
  return stats;
}

}  // namespace

std::vector<ParticleBatch> particle_batches(const format::Container& container, std::uint32_t frame, std::uint32_t field,
                                            std::uint64_t batch_particles) {
  std::vector<ParticleBatch> batches;
  const auto chunks = container.chunks_of(frame, field);
  for (std::uint64_t k = 0; k < chunks.size(); ++k) {
    const format::ChunkInfo& chunk = chunks[k];
    if (batches.empty() || batches.back().particles + chunk.element_count > batch_particles) {
      batches.push_back({k, 0, chunk.first_element, 0});
    }
    ++batches.back().chunk_count;
    batches.back().particles += chunk.element_count;
  }
  return batches;
}

struct SegmentedRenderer::Target : std::variant<HostTarget, DeviceTarget> {
  using variant::variant;
};

SegmentedRenderer::SegmentedRenderer(ReferenceRenderer& renderer)
    : target_(std::make_unique<Target>(std::in_place_type<HostTarget>, renderer)) {}
SegmentedRenderer::SegmentedRenderer(GpuRenderer& renderer)
    : target_(std::make_unique<Target>(std::in_place_type<DeviceTarget>, renderer)) {}
SegmentedRenderer::~SegmentedRenderer() = default;

SegmentedRenderStats SegmentedRenderer::render(queue::Queue& queue, queue::FileId file, const format::Container& container,
                                               std::uint32_t frame, std::uint32_t field, const SegmentedRenderOptions& options) {
  return std::visit([&](auto& target) { return render_with(target, queue, file, container, frame, field, options); },
                    *target_);  // visited as its variant base (P2162, a defect report libstdc++ applies to C++20)
}

}  // namespace headrace::workloads::particles
