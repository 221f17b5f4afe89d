#include "headrace/workloads/particles/segmented_render.hpp"

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <variant>

#include "headrace/detail/aligned_buffer.hpp"
#include "headrace/detail/seconds.hpp"
#include "headrace/error.hpp"
#include "headrace/format/dtype.hpp"
#include "headrace/gpu/stream.hpp"

namespace headrace::workloads::particles {

// A next frame's first batches, loaded, checked and in place when the frame before returned.
struct SegmentedRenderer::NextLoads {
  std::string path;
  std::uint32_t frame = 0, field = 0;
  std::uint64_t batch_particles = 0, asked_segments = 0;  // the options it was loaded for
  std::uint64_t segments = 0, segment_bytes = 0;          // the buffer it sits in
  std::uint64_t first_segment = 0;  // its batch i sits in segment (first_segment + i) % segments
  std::uint64_t batches = 0;        // how many of its first batches
  std::uint64_t stored_bytes = 0;
  double h2d_seconds = 0;
};

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
  void await_load(const engine::Queue& queue, queue::FenceId fence) { queue.wait(fence); }
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
  void await_load(const engine::Queue& queue, queue::FenceId fence) {
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

using NextLoads = SegmentedRenderer::NextLoads;

// A frame's batches of one field, with the chunks they group and what a load and a segment need of them.
struct FrameBatches {
  std::uint32_t frame = 0;
  std::vector<ParticleBatch> batches;
  std::span<const format::ChunkInfo> chunks;
  std::uint64_t first_chunk = 0;    // the number of the frame's first chunk in the file (for labels)
  std::uint64_t largest_bytes = 0;  // of its largest batch
};
FrameBatches batches_of(const format::Container& container, std::uint32_t frame, std::uint32_t field,
                        std::uint64_t batch_particles) {
  FrameBatches of{frame, particle_batches(container, frame, field, batch_particles), container.chunks_of(frame, field),
                  container.frame_field(frame, field).first_chunk, 0};
  for (const auto& batch : of.batches) of.largest_bytes = std::max(of.largest_bytes, batch.particles * sizeof(Particle));
  return of;
}

template <typename Target>
SegmentedRenderStats render_with(Target& target, std::unique_ptr<NextLoads>& carried, engine::Queue& queue, queue::FileId file,
                                 const format::Container& container, std::uint32_t frame, std::uint32_t field,
                                 const SegmentedRenderOptions& options) {
  expect_particles(container, frame, field, options);
  const FrameBatches own = batches_of(container, frame, field, options.batch_particles);
  const std::vector<ParticleBatch>& batches = own.batches;
  const std::uint64_t n = batches.size();

  // A series: the next frame's batches, the first of them loaded into this frame's buffer.
  FrameBatches following;
  if (options.next_frame) {
    const std::uint32_t g = *options.next_frame;
    HEADRACE_EXPECT(g < container.frames().size(), UsageError,
                    container.path() + ": no next frame " + std::to_string(g) + " (" +
                        std::to_string(container.frames().size()) + " frames)");
    if (!options.preload) following = batches_of(container, g, field, options.batch_particles);
  }

  // The first batches of this frame, when the call before loaded them for it (data at rest in the
  // segments, checked): the buffer is kept as it is. Otherwise the buffer holds a segment per batch of
  // both frames, up to options.segments (preload: every batch of this one), and is simply reused.
  const std::unique_ptr<NextLoads> ready = std::move(carried);
  const bool adopted = ready && ready->path == container.path() && ready->frame == frame && ready->field == field &&
                       ready->batch_particles == options.batch_particles && ready->asked_segments == options.segments &&
                       !options.preload && ready->segment_bytes >= own.largest_bytes;
  const std::uint64_t have = adopted ? ready->batches : 0;
  const std::uint64_t base = adopted ? ready->first_segment : 0;  // batch i sits in segment (base + i) % segments
  const std::uint64_t segments =
      adopted ? ready->segments
              : std::max<std::uint64_t>(options.preload ? n : std::min<std::uint64_t>(options.segments, n + following.batches.size()), 1);
  const std::uint64_t segment_bytes = adopted ? ready->segment_bytes : std::max(own.largest_bytes, following.largest_bytes);
  // Of the next frame's batches, those loaded ahead: never into the segment of this frame's last draw,
  // which would wait for it.
  const std::uint64_t ahead =
      following.largest_bytes <= segment_bytes ? std::min<std::uint64_t>(following.batches.size(), segments - 1) : 0;
  target.prepare(segment_bytes, segments);
  auto segment_of = [&](std::uint64_t i) { return (base + i) % segments; };

  // A frame that stops on an error cancels its other requests (and the next frame's) and waits for
  // those in flight, so no read lands in the segments after it returned.
  const std::uint64_t tag = reinterpret_cast<std::uintptr_t>(&target);
  struct StopLoads {
    engine::Queue& queue;
    std::uint64_t tag;
    ~StopLoads() {
      try {
        queue.cancel_tag(tag);
        queue.drain();
      } catch (const Error&) {  // the queue reports its own failures per request
      }
    }
  } stop_loads{queue, tag};

  // The next frame's loads (a series): handed to the next call once every one of them has arrived.
  std::unique_ptr<NextLoads> next_loads;
  std::vector<std::vector<queue::RequestId>> next_requests(ahead);
  queue::FenceId next_fence = 0;
  if (ahead > 0)
    next_loads = std::make_unique<NextLoads>(NextLoads{container.path(), *options.next_frame, field, options.batch_particles,
                                                       options.segments, segments, segment_bytes, segment_of(n), ahead, 0, 0});

  SegmentedRenderStats stats;
  stats.batches = n;
  stats.loaded_ahead = have;
  std::vector<std::vector<queue::RequestId>> requests(n);
  std::vector<queue::FenceId> fences(n);
  // Enqueues batch b of a frame's chunks into segment s, then a fence: (stored bytes, fence).
  auto load = [&](const FrameBatches& of, std::uint64_t b, std::uint64_t s, std::vector<queue::RequestId>& ids) {
    const ParticleBatch& batch = of.batches[b];
    std::uint64_t stored = 0;
    for (std::uint64_t k = batch.first_chunk; k < batch.first_chunk + batch.chunk_count; ++k) {
      const format::ChunkInfo& chunk = of.chunks[k];
      const std::uintptr_t at = target.segment(s) + (chunk.first_element - batch.first_particle) * sizeof(Particle);
      queue::Request request = queue::chunk_request(file, chunk, {target.memory(), at, chunk.raw_size});
      request.label = queue::chunk_label(container, of.frame, field, of.first_chunk + k, chunk);
      request.tag = tag;
      ids.push_back(queue.enqueue(std::move(request)));
      stored += chunk.stored_size;
    }
    const queue::FenceId fence = queue.enqueue_signal();
    queue.submit();
    return std::pair{stored, fence};
  };
  auto load_own = [&](std::uint64_t b) {
    const auto [stored, fence] = load(own, b, segment_of(b), requests[b]);
    stats.stored_bytes += stored;
    fences[b] = fence;
  };
  // A failed read or decode stops the frame, naming its chunk; GPU decoding reports after the draw was
  // issued, so the frame is checked once more at the end and fails then, never returning its image.
  // Finished requests also add their copy time to *h2d.
  auto failure = [&](const std::vector<queue::RequestId>& ids, double* h2d = nullptr) -> std::string {
    for (const queue::RequestId id : ids) {
      const queue::RequestStatus status = queue.status(id);
      if (status.state == queue::RequestState::failed || status.state == queue::RequestState::cancelled)
        return status.message;
      if (h2d != nullptr) *h2d += status.h2d_s;
    }
    return {};
  };
  auto check = [&](std::uint64_t b, double* h2d = nullptr) {
    if (const std::string why = failure(requests[b], h2d); !why.empty())
      throw Error("frame " + std::to_string(frame) + " stopped: " + why);
  };

  target.clear();
  auto start = Clock::now();
  if (options.preload) {
    for (std::uint64_t b = 0; b < n; ++b) load_own(b);
    for (std::uint64_t b = 0; b < n; ++b) {
      queue.wait(fences[b]);
      check(b);
    }
    start = Clock::now();
    for (std::uint64_t b = 0; b < n && options.draw; ++b) target.draw(b, batches[b]);
  } else {
    if (adopted) {
      stats.stored_bytes += ready->stored_bytes;
      stats.h2d_seconds += ready->h2d_seconds;
    }
    // Index i < n is this frame's batch i, i >= n the next frame's batch i - n: each loads as soon as its
    // segment's previous batch, index i - segments, is drawn, so the next frame's loads run while this
    // one is drawn (all of them at once when the buffer has a free segment for each).
    auto load_index = [&](std::uint64_t i) {
      if (target.wait_for_segment(segment_of(i))) ++stats.segment_waits;
      if (i < n) return load_own(i);
      const auto [stored, fence] = load(following, i - n, segment_of(i), next_requests[i - n]);
      next_loads->stored_bytes += stored;
      next_fence = fence;
    };
    for (std::uint64_t b = 0, next = have; b < n; ++b) {
      for (; next < n + ahead && next < b + segments; ++next) load_index(next);
      if (b >= have) {
        target.await_load(queue, fences[b]);
        check(b);
      }
      if (options.draw) target.draw(segment_of(b), batches[b]);
      target.segment_done(segment_of(b));
    }
  }
  target.finish(stats);
  if (next_loads) queue.wait(next_fence);  // the next frame's loads are within this frame's clock
  stats.seconds = seconds_since(start);
  queue.drain();
  for (std::uint64_t b = have; b < n; ++b) check(b, &stats.h2d_seconds);
  for (const auto& batch : batches) stats.particles += batch.particles;
  for (const double s : stats.batch_draw_seconds) stats.draw_seconds += s;
  // Carried only when every next-frame load arrived; a failed one is read again, and reported, by the
  // call that draws it.
  if (next_loads && std::all_of(next_requests.begin(), next_requests.end(),
                  [&](const auto& ids) { return failure(ids, &next_loads->h2d_seconds).empty(); }))
    carried = std::move(next_loads);
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

SegmentedRenderStats SegmentedRenderer::render(engine::Queue& queue, queue::FileId file, const format::Container& container,
                                               std::uint32_t frame, std::uint32_t field, const SegmentedRenderOptions& options) {
  return std::visit([&](auto& target) { return render_with(target, next_, queue, file, container, frame, field, options); },
                    *target_);  // visited as its variant base (P2162, a defect report libstdc++ applies to C++20)
}

}  // namespace headrace::workloads::particles
