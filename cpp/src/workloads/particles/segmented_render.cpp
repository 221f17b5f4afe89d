#include "headrace/workloads/particles/segmented_render.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <variant>

#include "headrace/detail/aligned_buffer.hpp"
#include "headrace/detail/seconds.hpp"
#include "headrace/engine/slot_stream.hpp"
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

  // Segments for the frames to come, in the memory of the frames before when it is large enough.
  void prepare(std::uint64_t segment_bytes, std::uint64_t segments) {
    segment_bytes_ = segment_bytes;
    if (memory_.size_bytes() < segment_bytes * segments) memory_ = headrace::detail::AlignedBuffer(segment_bytes * segments);
  }
  [[nodiscard]] queue::MemoryKind memory() const { return queue::MemoryKind::host; }
  [[nodiscard]] std::uintptr_t segment(std::uint64_t s) const {
    return reinterpret_cast<std::uintptr_t>(memory_.data() + s * segment_bytes_);
  }
  // Host draws read the bytes: a batch is handed out once they are in place.
  [[nodiscard]] static engine::Readiness readiness() { return engine::Readiness::done; }
  void begin_frame() {
    renderer_->clear();
    draws_.clear();
  }
  void await_load(const engine::Queue&, queue::FenceId) {}
  void draw(std::uint64_t s, const ParticleBatch& batch) {
    const auto start = Clock::now();
    renderer_->draw({reinterpret_cast<const Particle*>(segment(s)), batch.particles},
                    static_cast<std::uint32_t>(batch.first_particle));
    draws_.push_back(seconds_since(start));
  }
  [[nodiscard]] static std::uintptr_t consumer() { return 0; }  // a host draw has ended when it returns
  void finish(SegmentedRenderStats& stats) { stats.batch_draw_seconds = std::move(draws_); }

 private:
  ReferenceRenderer* renderer_;
  std::uint64_t segment_bytes_ = 0;
  headrace::detail::AlignedBuffer memory_;
  std::vector<double> draws_;
};

// The GPU renderer over device segments: draws are kernels on our stream, which waits on each batch's
// fence; the slot stream refills a segment once the stream has passed the draw that read it.
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

  // Segments for the frames to come, in the memory of the frames before when it is large enough; a
  // frame that stopped on an error may have left draws running, so they finish before the memory is reused.
  void prepare(std::uint64_t segment_bytes, std::uint64_t segments) {
    renderer_->make_current();
    stream_.synchronize();
    segment_bytes_ = segment_bytes;
    if (memory_.size_bytes() < segment_bytes * segments) {
      memory_ = gpu::DeviceBuffer();  // the old buffer goes first: the two may not fit together
      memory_ = gpu::DeviceBuffer(segment_bytes * segments);
    }
  }
  [[nodiscard]] queue::MemoryKind memory() const { return queue::MemoryKind::device; }
  [[nodiscard]] std::uintptr_t segment(std::uint64_t s) const { return memory_.pointer() + s * segment_bytes_; }
  // The reads done and their copies issued: the draw stream waits for the rest on the GPU.
  [[nodiscard]] static engine::Readiness readiness() { return engine::Readiness::issued; }
  void begin_frame() {
    renderer_->make_current();
    renderer_->clear(stream_.handle());
    draws_ = 0;
  }
  void await_load(const engine::Queue& queue, queue::FenceId fence) {
    queue.wait_on_stream(fence, reinterpret_cast<std::uintptr_t>(stream_.handle()));
  }
  void draw(std::uint64_t s, const ParticleBatch& batch) {
    if (draws_ == timings_.size()) timings_.push_back(std::make_unique<Timing>());
    Timing& timing = *timings_[draws_++];
    timing.start.record(stream_.handle());
    renderer_->draw(segment(s), batch.particles, static_cast<std::uint32_t>(batch.first_particle), stream_.handle());
    timing.end.record(stream_.handle());
  }
  // A segment is free once the draw stream gets past this point: after its draw, or, streaming alone,
  // once it has waited on the batch's fence.
  [[nodiscard]] std::uintptr_t consumer() const { return reinterpret_cast<std::uintptr_t>(stream_.handle()); }
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
  std::vector<std::unique_ptr<Timing>> timings_;  // reused frame after frame; the first draws_ are this frame's
  std::size_t draws_ = 0;
};

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

// A unit of the slot stream: batch b of frame f.
std::uint64_t batch_unit(std::uint32_t frame, std::uint64_t batch) { return (std::uint64_t{frame} << 32) | batch; }
std::uint32_t frame_of(std::uint64_t unit) { return static_cast<std::uint32_t>(unit >> 32); }
std::uint64_t batch_of(std::uint64_t unit) { return unit & 0xffffffffu; }

std::vector<std::uint64_t> units_of(const FrameBatches& of) {
  std::vector<std::uint64_t> units(of.batches.size());
  for (std::uint64_t b = 0; b < units.size(); ++b) units[b] = batch_unit(of.frame, b);
  return units;
}

}  // namespace

// The slot stream over the segments (a slot per segment, a unit per batch), with what it was made for:
// a call for anything else makes a new one.
struct SegmentedRenderer::Stream {
  const engine::Queue* queue = nullptr;
  queue::FileId file = 0;
  std::string path;
  std::uint32_t field = 0;
  std::uint64_t batch_particles = 0, asked_segments = 0;
  bool preload = false;
  std::uint64_t segment_bytes = 0;
  // The batches of the frames the stream may fill (this call's and the next one's: its order holds no
  // other), over the container of the call: the stream fills only inside render().
  const format::Container* container = nullptr;
  std::map<std::uint32_t, FrameBatches> frames;
  std::unique_ptr<engine::SlotStream> slots;
  // When the last call ended, where it left its next frame's loads running (the next frame's clock
  // starts there).
  std::optional<headrace::detail::SteadyClock::time_point> ended_at;

  [[nodiscard]] bool serves(const engine::Queue& q, queue::FileId f, const format::Container& c, std::uint32_t fi,
                            const SegmentedRenderOptions& options, std::uint64_t bytes) const {
    return queue == &q && file == f && path == c.path() && field == fi && batch_particles == options.batch_particles &&
           asked_segments == options.segments && preload == options.preload && segment_bytes >= bytes;
  }
};

namespace {

// The requests that put batch `b` of `of` into the target's segment `s`.
template <typename Target>
std::vector<engine::Request> batch_requests(const Target& target, queue::FileId file, const format::Container& container,
                                            std::uint32_t field, const FrameBatches& of, std::uint64_t b, std::uint64_t s) {
  const ParticleBatch& batch = of.batches[b];
  std::vector<engine::Request> requests;
  for (std::uint64_t k = batch.first_chunk; k < batch.first_chunk + batch.chunk_count; ++k) {
    const format::ChunkInfo& chunk = of.chunks[k];
    const std::uintptr_t at = target.segment(s) + (chunk.first_element - batch.first_particle) * sizeof(Particle);
    queue::Request request = queue::chunk_request(file, chunk, {target.memory(), at, chunk.raw_size});
    request.label = queue::chunk_label(container, of.frame, field, of.first_chunk + k, chunk);
    requests.push_back(std::move(request));
  }
  return requests;
}

template <typename Target>
SegmentedRenderStats render_with(Target& target, std::unique_ptr<SegmentedRenderer::Stream>& stream, engine::Queue& queue,
                                 queue::FileId file, const format::Container& container, std::uint32_t frame,
                                 std::uint32_t field, const SegmentedRenderOptions& options) {
  expect_particles(container, frame, field, options);
  std::optional<std::uint32_t> next_frame;
  if (options.next_frame && !options.preload) {
    next_frame = *options.next_frame;
    HEADRACE_EXPECT(*next_frame < container.frames().size(), UsageError,
                    container.path() + ": no next frame " + std::to_string(*next_frame) + " (" +
                        std::to_string(container.frames().size()) + " frames)");
  }
  const FrameBatches own = batches_of(container, frame, field, options.batch_particles);
  const std::uint64_t n = own.batches.size();
  const FrameBatches following =
      next_frame ? batches_of(container, *next_frame, field, options.batch_particles) : FrameBatches{};

  // The stream of the calls before, with this frame's first batches in its segments when the call
  // before asked for it; a new one (and maybe a larger buffer) when it cannot hold this frame.
  const std::uint64_t segment_bytes = std::max(own.largest_bytes, following.largest_bytes);
  if (!stream || !stream->serves(queue, file, container, field, options, segment_bytes)) {
    stream.reset();  // stops its reads before the segments may move
    const std::uint64_t segments = std::max<std::uint64_t>(
        options.preload ? n : std::min<std::uint64_t>(options.segments, n + following.batches.size()), 1);
    target.prepare(segment_bytes, segments);
    stream = std::make_unique<SegmentedRenderer::Stream>(SegmentedRenderer::Stream{
        &queue, file, container.path(), field, options.batch_particles, options.segments, options.preload, segment_bytes,
        &container, {}, nullptr, std::nullopt});
    engine::SlotStreamOptions slot_options;
    slot_options.slots = static_cast<std::uint32_t>(segments);
    slot_options.tag = reinterpret_cast<std::uintptr_t>(&target);
    slot_options.name = [](std::uint64_t unit) {
      return "frame " + std::to_string(frame_of(unit)) + " batch " + std::to_string(batch_of(unit));
    };
    SegmentedRenderer::Stream* state = stream.get();
    stream->slots = std::make_unique<engine::SlotStream>(
        queue,
        [state, &target](std::uint64_t unit, std::uint32_t slot) {
          return batch_requests(target, state->file, *state->container, state->field, state->frames.at(frame_of(unit)),
                                batch_of(unit), slot);
        },
        std::move(slot_options));
  }
  SegmentedRenderer::Stream& state = *stream;
  engine::SlotStream& slots = *state.slots;
  state.container = &container;
  state.frames.clear();  // batches over this call's container
  state.frames.emplace(frame, own);
  if (next_frame) state.frames.emplace(*next_frame, following);

  SegmentedRenderStats stats;
  stats.batches = n;
  for (const ParticleBatch& batch : own.batches) {
    stats.particles += batch.particles;
    for (std::uint64_t k = batch.first_chunk; k < batch.first_chunk + batch.chunk_count; ++k)
      stats.stored_bytes += own.chunks[k].stored_size;
  }
  const std::uint64_t waits_before = slots.release_waits();
  target.begin_frame();
  auto start = Clock::now();
  // A failed batch stops the frame, naming its chunk; what is in flight is cancelled (with the next
  // frame's loads) and the next call starts a new stream.
  try {
    // The call before queued this frame's batches behind its own: they are in flight (the first ones
    // arrived) or wait for a segment. Otherwise: a seek.
    const bool adopted = !options.preload && slots.upcoming() == batch_unit(frame, 0) &&
                         slots.in_flight() + slots.unscheduled() == n;
    stats.loaded_ahead = adopted ? slots.in_flight() : 0;
    if (adopted && state.ended_at) {
      stats.between_calls_seconds = headrace::detail::seconds_between(*state.ended_at, start);
      start = *state.ended_at;
    }
    state.ended_at.reset();
    if (!adopted) slots.play(units_of(own));
    if (next_frame) slots.extend(units_of(following));
    std::vector<std::vector<queue::RequestId>> requests;
    std::vector<engine::SlotDelivery> preloaded;
    auto take = [&](std::uint64_t b) {
      std::optional<engine::SlotDelivery> delivery = slots.next(options.preload ? engine::Readiness::done : target.readiness());
      HEADRACE_EXPECT(delivery && delivery->unit == batch_unit(frame, b), Error,
                      "frame " + std::to_string(frame) + ": the slot stream handed out another batch than " + std::to_string(b));
      requests.push_back(delivery->requests);
      return std::move(*delivery);
    };
    auto draw = [&](const engine::SlotDelivery& delivery) {
      if (options.draw) target.draw(delivery.slot, own.batches[batch_of(delivery.unit)]);
      slots.release(delivery.slot, target.consumer());
    };
    if (options.preload) {  // every batch in place before the clock starts
      for (std::uint64_t b = 0; b < n; ++b) preloaded.push_back(take(b));
      start = Clock::now();
      for (const auto& delivery : preloaded) draw(delivery);
    } else {
      for (std::uint64_t b = 0; b < n; ++b) {
        const engine::SlotDelivery delivery = take(b);
        target.await_load(queue, delivery.fence);
        draw(delivery);
      }
    }
    target.finish(stats);
    // The next frame's loads run on past the return (the copies go on while the caller takes the image);
    // its clock starts here.
    slots.refill();
    stats.seconds = seconds_since(start);
    if (next_frame) state.ended_at = Clock::now();
    // GPU decoding reports after the draw was issued: the frame fails then, never returning its image.
    for (std::uint64_t b = 0; b < n; ++b) {
      const engine::RequestSummary summary = queue.summarize(requests[b]);
      if (summary.failed != 0 || summary.cancelled != 0) {
        const std::string context = "frame " + std::to_string(frame) + " batch " + std::to_string(b) + ": ";
        if (summary.first_error) rethrow_with_context(summary.first_error, context);
        throw Error(context + summary.first_failure);
      }
      stats.h2d_seconds += summary.h2d_s;
    }
  } catch (...) {
    stream.reset();
    throw;
  }
  stats.segment_waits = slots.release_waits() - waits_before;
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

SegmentedRenderStats SegmentedRenderer::render(engine::Queue& queue, queue::FileId file, const format::Container& container,
                                               std::uint32_t frame, std::uint32_t field, const SegmentedRenderOptions& options) {
  return std::visit([&](auto& target) { return render_with(target, stream_, queue, file, container, frame, field, options); },
                    *target_);  // visited as its variant base (P2162, a defect report libstdc++ applies to C++20)
}

}  // namespace headrace::workloads::particles
