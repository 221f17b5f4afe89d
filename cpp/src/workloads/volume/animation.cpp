#include "headrace/workloads/volume/animation.hpp"

#include <chrono>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <numeric>
#include <optional>
#include <span>

#include "headrace/codec/chunk_reader.hpp"
#include "headrace/detail/aligned_buffer.hpp"
#include "headrace/engine/frame_fill.hpp"
#include "headrace/engine/slot_stream.hpp"
#include "headrace/error.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/stream.hpp"
#include "headrace/io/backend.hpp"

namespace headrace::workloads::volume {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

void check_options(const format::Container& container, const VolumeTopology& topology, const PlayOptions& options) {
  HEADRACE_EXPECT(!options.frames.empty(), UsageError, "no frames to play");
  for (std::uint32_t f : options.frames)
    HEADRACE_EXPECT(f < container.frames().size(), UsageError,
                    container.path() + ": frame " + std::to_string(f) + " does not exist (the file has " +
                        std::to_string(container.frames().size()) + " frames)");
  HEADRACE_EXPECT(options.field < container.fields().size(), UsageError, "no field " + std::to_string(options.field));
  HEADRACE_EXPECT(options.slots >= 1 && options.slots <= 64, UsageError, "slots must be in 1..64");
  check_transfer_function(options.tf);
  (void)topology;
}

std::uint64_t stored_bytes_of(const format::Container& container, std::uint32_t frame, std::uint32_t field) {
  std::uint64_t total = 0;
  for (const auto& chunk : container.chunks_of(frame, field)) total += chunk.stored_size;
  return total;
}

// Reads a frame's field with a host backend: buffered and one thread (the paper's fread), or O_DIRECT.
class FrameReader {
 public:
  FrameReader(const format::Container& container, std::uint32_t field, bool direct) : container_(container), field_(field) {
    io::BackendOptions options;
    if (!direct) options.settings.threads = 1, options.settings.task_size_bytes = std::uint64_t{256} << 20;  // the most a task may be
    backend_ = io::open_backend(direct ? io::BackendKind::direct : io::BackendKind::posix, container.path(), options);
  }
  // A frame that cannot be read or decoded throws its error as its own type, led by the frame.
  void read(std::uint32_t frame, std::byte* destination, std::uint64_t bytes) {
    try {
      codec::read_field(container_, *backend_, frame, field_, {destination, bytes});
    } catch (...) {
      rethrow_with_context(std::current_exception(), container_.path() + ": frame " + std::to_string(frame) + ": ");
    }
  }
  [[nodiscard]] std::string describe() const { return std::string(io::to_string(backend_->kind())) + " (" + backend_->describe() + ")"; }

 private:
  const format::Container& container_;
  std::uint32_t field_;
  std::unique_ptr<io::Backend> backend_;
};

// The flattening pass the paper's step 4 removes: every scalar written to its place through a per-cell
// index (identity here: the file is already in brick order), on one CPU thread.
void flatten(const float* source, float* destination, const std::vector<std::uint32_t>& index) {
  for (std::size_t i = 0; i < index.size(); ++i) destination[index[i]] = source[i];
}

std::vector<std::uint32_t> flatten_index(const VolumeTopology& topology) {
  HEADRACE_EXPECT(topology.cell_count() < (std::uint64_t{1} << 32), UsageError,
                  "the flattening stages (baseline .. direct) need fewer than 2^32 cells a frame; start at stage flat");
  std::vector<std::uint32_t> index(topology.cell_count());
  std::iota(index.begin(), index.end(), 0u);
  return index;
}

// GPU spans by CUDA events, turned into host seconds at the end (once every event has fired).
class EventClock {
 public:
  EventClock(Clock::time_point t0, gpu::CUstream stream) : t0_(t0) {
    zero_.record(stream);
    zero_.synchronize();
    zero_seconds_ = seconds_between(t0_, Clock::now());
  }
  // Records a start event now on stream; close() records its end.
  std::size_t open(gpu::CUstream stream) {
    events_.emplace_back(true).record(stream);
    return events_.size() - 1;
  }
  std::size_t close(gpu::CUstream stream) { return open(stream); }
  [[nodiscard]] double seconds(std::size_t event) const {
    return zero_seconds_ + static_cast<double>(events_[event].elapsed_ms_since(zero_)) / 1000.0;
  }

 private:
  Clock::time_point t0_;
  gpu::Event zero_{true};
  double zero_seconds_ = 0;
  std::deque<gpu::Event> events_;
};

struct PendingSpan {
  std::size_t frame_index;
  SpanKind kind;
  std::size_t start_event, end_event;
};

struct Recorder {
  Clock::time_point t0 = Clock::now();
  std::vector<PlayedFrame> frames;
  std::vector<PendingSpan> gpu_spans;
  std::vector<std::size_t> frame_end_event;  // GPU: the event after each frame's render

  double now() const { return seconds_between(t0, Clock::now()); }
  void host(std::size_t i, SpanKind kind, double start, double end) { frames[i].spans.push_back({kind, start, end}); }
};

void finish_frames(Recorder& rec, const EventClock* clock, PlayResult& result) {
  if (clock) {
    for (const auto& s : rec.gpu_spans)
      rec.frames[s.frame_index].spans.push_back({s.kind, clock->seconds(s.start_event), clock->seconds(s.end_event)});
    for (std::size_t i = 0; i < rec.frames.size(); ++i) rec.frames[i].end = clock->seconds(rec.frame_end_event[i]);
  }
  double previous = 0;
  for (auto& f : rec.frames) {
    f.start = previous;
    previous = f.end;
  }
  result.seconds = rec.frames.empty() ? 0 : rec.frames.back().end;
  result.frames = std::move(rec.frames);
}


// The paper's file I/O (sections 5.1 and 5.2): frame i read into buffer(0) when it is needed, or, double
// buffered, into buffer(i % 2) while the frame before it is processed, on a second thread (figure 4).
class ReadAhead {
 public:
  ReadAhead(FrameReader& reader, std::uint64_t bytes, bool doubled, std::function<std::byte*(unsigned)> buffer)
      : reader_(reader), bytes_(bytes), doubled_(doubled), buffer_(std::move(buffer)) {}
  // Waits for a read still running: it writes a buffer its owner is about to free.
  ~ReadAhead() {
    if (ahead_.valid()) ahead_.wait();
  }
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // Frame order[i] once read (its span recorded as rec's frame i), then the next frame's read begun.
  std::byte* take(std::size_t i, std::span<const std::uint32_t> order, Recorder& rec) {
    const unsigned front = doubled_ ? static_cast<unsigned>(i % 2) : 0;
    const Span read = ahead_.valid() ? ahead_.get() : read_into(order[i], front, rec);
    rec.host(i, SpanKind::io, read.start, read.end);
    if (doubled_ && i + 1 < order.size())
      ahead_ = std::async(std::launch::async, [this, &rec, frame = order[i + 1], back = 1 - front] { return read_into(frame, back, rec); });
    return buffer_(front);
  }

 private:
  Span read_into(std::uint32_t frame, unsigned b, const Recorder& rec) {
    Span span{SpanKind::io, rec.now(), 0};
    reader_.read(frame, buffer_(b), bytes_);
    span.end = rec.now();
    return span;
  }

  FrameReader& reader_;
  std::uint64_t bytes_;
  bool doubled_;
  std::function<std::byte*(unsigned)> buffer_;
  std::future<Span> ahead_;  // the next frame, being read into the other buffer
};

// The `all` stage's stream: the field's frames into the slots at `destinations` through the engine,
// errors naming the file and frame.
engine::SlotStream frame_stream(engine::Queue& queue, const format::Container& container, std::uint32_t field,
                                std::shared_ptr<engine::SlotDestinations> destinations, queue::MemoryKind memory) {
  const engine::FileId file = queue.add_file(container.path());
  engine::SlotStreamOptions options;
  options.slots = static_cast<std::uint32_t>(destinations->size());
  options.name = [&container](std::uint64_t unit) { return container.path() + ": frame " + std::to_string(unit); };
  return engine::SlotStream(queue, engine::frame_fill(container, file, {field}, std::move(destinations), memory), std::move(options));
}

// The paper's loop (stages baseline .. overlap) on a GPU.
PlayResult play_paper_gpu(const format::Container& container, const VolumeTopology& topology, GpuVolumeRenderer& renderer,
                          const PlayOptions& options) {
  const Stage stage = options.stage;
  const bool doubled = stage >= Stage::double_buffer, pinned = stage >= Stage::pinned, direct = stage >= Stage::direct;
  const bool flat = stage >= Stage::flat, refit = stage >= Stage::refit, overlap = stage >= Stage::overlap;
  const std::uint64_t bytes = topology.cell_count() * sizeof(float);
  PlayResult result;
  result.frame_bytes = bytes;

  renderer.make_current();
  const unsigned read_buffers = doubled ? 2 : 1;
  std::vector<detail::AlignedBuffer> pageable;
  std::vector<gpu::PinnedBuffer> locked;
  for (unsigned b = 0; b < read_buffers; ++b) {
    if (flat)
      locked.push_back(gpu::PinnedBuffer::of_huge_pages_if_possible(bytes));
    else
      pageable.emplace_back(bytes);
  }
  std::optional<detail::AlignedBuffer> upload_pageable;
  std::optional<gpu::PinnedBuffer> upload_locked;
  std::vector<std::uint32_t> index;
  if (!flat) {
    index = flatten_index(topology);
    if (pinned)
      upload_locked.emplace(gpu::PinnedBuffer::of_huge_pages_if_possible(bytes));
    else
      upload_pageable.emplace(bytes);
  }
  const auto read_buffer = [&](unsigned b) { return flat ? locked[b].data() : pageable[b].data(); };
  FrameReader reader(container, options.field, direct);
  ReadAhead reads(reader, bytes, doubled, read_buffer);
  std::vector<gpu::DeviceBuffer> device;
  for (unsigned b = 0; b < (overlap ? 2u : 1u); ++b) device.emplace_back(bytes);
  GpuRegionState state = renderer.region_state();
  std::optional<VolumeTopology> rebuilt;
  if (!refit) rebuilt.emplace(topology);
  result.notes = "reads: " + reader.describe() + (pinned ? "; page-locked upload buffer" : "; pageable upload buffer");

  const gpu::Stream compute, copy;
  Recorder rec;
  EventClock clock(rec.t0, compute.handle());
  const auto copy_stream = copy.handle(), compute_stream = compute.handle();
  const auto sync = [](gpu::CUstream s) { gpu::check(gpu::require_driver().cuStreamSynchronize(s), "cuStreamSynchronize"); };

  for (std::size_t i = 0; i < options.frames.size(); ++i) {
    const std::uint32_t frame = options.frames[i];
    rec.frames.push_back({frame, 0, 0, {}});
    const std::byte* source = reads.take(i, options.frames, rec);
    result.stored_bytes += stored_bytes_of(container, frame, options.field);
    // Flattening into the upload buffer.
    if (!flat) {
      std::byte* upload = pinned ? upload_locked->data() : upload_pageable->data();
      const double start = rec.now();
      flatten(reinterpret_cast<const float*>(source), reinterpret_cast<float*>(upload), index);
      rec.host(i, SpanKind::flatten, start, rec.now());
      source = upload;
    }
    // Host to device: waited for at once, except with overlap, where it runs beside the last render
    // and the device-wide wait comes after it (the paper's figure 7).
    const gpu::CUdeviceptr target = device[overlap ? i % 2 : 0].pointer();
    const std::size_t copy_start = clock.open(copy_stream);
    gpu::check(gpu::require_driver().cuMemcpyHtoDAsync(target, source, bytes, copy_stream), "cuMemcpyHtoDAsync");
    rec.gpu_spans.push_back({i, SpanKind::h2d, copy_start, clock.close(copy_stream)});
    sync(copy_stream);
    if (overlap) sync(compute_stream);
    // Value ranges, the structure (rebuilt or refit), the image.
    const std::size_t ranges_start = clock.open(compute_stream);
    renderer.ranges(target, state, compute_stream);
    rec.gpu_spans.push_back({i, SpanKind::ranges, ranges_start, clock.close(compute_stream)});
    if (refit) {
      const std::size_t start = clock.open(compute_stream);
      renderer.classify(state, compute_stream);
      rec.gpu_spans.push_back({i, SpanKind::structure, start, clock.close(compute_stream)});
    } else {
      sync(compute_stream);  // the rebuild replaces buffers the ranges pass reads
      const double start = rec.now();
      rebuilt->rebuild_regions();
      renderer.upload_regions(*rebuilt, compute_stream);
      renderer.classify(state, compute_stream);
      sync(compute_stream);
      rec.host(i, SpanKind::structure, start, rec.now());
    }
    const std::size_t render_start = clock.open(compute_stream);
    renderer.render(target, state, options.camera, compute_stream);
    const std::size_t render_end = clock.close(compute_stream);
    rec.gpu_spans.push_back({i, SpanKind::render, render_start, render_end});
    rec.frame_end_event.push_back(render_end);
    if (!overlap) sync(compute_stream);
    if (options.on_image && !options.on_image(frame, renderer.image(compute_stream))) break;
  }
  sync(compute_stream);
  sync(copy_stream);
  finish_frames(rec, &clock, result);
  return result;
}

// Past the paper: the engine streams frames into GPU slots; ranges and classification on their own
// stream as each frame lands; rendering on another.
PlayResult play_engine_gpu(const format::Container& container, const VolumeTopology& topology, GpuVolumeRenderer& renderer,
                           engine::Queue& queue, const PlayOptions& options) {
  HEADRACE_EXPECT(queue.has_gpu(), UsageError, "the `all` stage on a GPU needs a queue with GPU destinations");
  const std::uint64_t bytes = topology.cell_count() * sizeof(float);
  PlayResult result;
  result.frame_bytes = bytes;
  renderer.make_current();
  std::vector<gpu::DeviceBuffer> slots;
  std::vector<GpuRegionState> states;
  auto destinations = std::make_shared<engine::SlotDestinations>();
  for (std::uint32_t s = 0; s < options.slots; ++s) {
    slots.emplace_back(bytes);
    states.push_back(renderer.region_state());
    destinations->push_back({static_cast<std::uintptr_t>(slots.back().pointer())});
  }
  engine::SlotStream stream = frame_stream(queue, container, options.field, destinations, queue::MemoryKind::device);
  bool compressed = false;
  for (std::uint32_t frame : options.frames)
    for (const auto& chunk : container.chunks_of(frame, options.field)) compressed = compressed || chunk.codec != format::CodecId::none;
  result.notes = "engine: " + queue.describe();

  const gpu::Stream prepare, draw;
  Recorder rec;
  EventClock clock(rec.t0, draw.handle());
  std::vector<std::uint64_t> order(options.frames.begin(), options.frames.end());
  stream.play(order);
  std::vector<gpu::Event> prepared;  // one per slot: its ranges and classification done
  for (std::uint32_t s = 0; s < options.slots; ++s) prepared.emplace_back(false);
  for (std::size_t i = 0; i < options.frames.size(); ++i) {
    std::optional<engine::SlotDelivery> delivery = stream.next(engine::Readiness::issued);
    if (!delivery) break;
    const double handed = rec.now();
    const std::uint32_t frame = options.frames[i];
    rec.frames.push_back({frame, 0, 0, {}});
    rec.host(i, SpanKind::io, std::max(0.0, handed - delivery->ready_seconds), handed);
    result.stored_bytes += delivery->summary.stored_bytes;
    // The frame's copies (and decoding) on the queue's copy stream: from now to its fence.
    const std::size_t landed_start = clock.open(prepare.handle());
    queue.wait_on_stream(delivery->fence, reinterpret_cast<std::uintptr_t>(prepare.handle()));
    rec.gpu_spans.push_back({i, compressed ? SpanKind::decode : SpanKind::h2d, landed_start, clock.close(prepare.handle())});
    const gpu::CUdeviceptr scalars = slots[delivery->slot].pointer();
    GpuRegionState& state = states[delivery->slot];
    const std::size_t ranges_start = clock.open(prepare.handle());
    renderer.ranges(scalars, state, prepare.handle());
    rec.gpu_spans.push_back({i, SpanKind::ranges, ranges_start, clock.close(prepare.handle())});
    const std::size_t refit_start = clock.open(prepare.handle());
    renderer.classify(state, prepare.handle());
    rec.gpu_spans.push_back({i, SpanKind::structure, refit_start, clock.close(prepare.handle())});
    prepared[delivery->slot].record(prepare.handle());
    gpu::check(gpu::require_driver().cuStreamWaitEvent(draw.handle(), prepared[delivery->slot].handle(), 0), "cuStreamWaitEvent");
    const std::size_t render_start = clock.open(draw.handle());
    renderer.render(scalars, state, options.camera, draw.handle());
    const std::size_t render_end = clock.close(draw.handle());
    rec.gpu_spans.push_back({i, SpanKind::render, render_start, render_end});
    rec.frame_end_event.push_back(render_end);
    stream.release(delivery->slot, reinterpret_cast<std::uintptr_t>(draw.handle()));
    if (options.on_image && !options.on_image(frame, renderer.image(draw.handle()))) break;
  }
  stream.stop();
  draw.synchronize();
  prepare.synchronize();
  finish_frames(rec, &clock, result);
  return result;
}

// The same loops on the CPU renderer.
PlayResult play_cpu(const format::Container& container, const VolumeTopology& topology, CpuVolumeRenderer& renderer,
                    engine::Queue* queue, const PlayOptions& options) {
  const Stage stage = options.stage;
  const std::uint64_t bytes = topology.cell_count() * sizeof(float);
  PlayResult result;
  result.frame_bytes = bytes;
  const bool doubled = stage >= Stage::double_buffer, direct = stage >= Stage::direct, flat = stage >= Stage::flat;
  const bool refit = stage >= Stage::refit;
  if (stage == Stage::pinned || stage == Stage::overlap)
    result.notes = std::string("on the CPU there is no copy to a GPU: stage ") + stage_name(stage) + " runs as the stage before it; ";
  std::optional<VolumeTopology> rebuilt;
  if (!refit) rebuilt.emplace(topology);
  const auto structure = [&](std::span<const ValueRange> ranges) {
    if (!refit) {
      rebuilt->rebuild_regions();  // the CPU renderer reads the topology's lists: rebuild an equal copy's, as the work
    }
    return renderer.classify(ranges, options.tf, options.settings);
  };
  Recorder rec;
  const auto show = [&](std::size_t i, std::span<const float> scalars) {
    double start = rec.now();
    const auto ranges = renderer.ranges(scalars);
    double end = rec.now();
    rec.host(i, SpanKind::ranges, start, end);
    const auto visible = structure(ranges);
    start = end, end = rec.now();
    rec.host(i, SpanKind::structure, start, end);
    auto image = renderer.render(scalars, visible, options.camera, options.tf, options.settings);
    start = end, end = rec.now();
    rec.host(i, SpanKind::render, start, end);
    rec.frames[i].end = end;
    return !options.on_image || options.on_image(options.frames[i], std::move(image));
  };

  if (stage == Stage::all) {
    HEADRACE_EXPECT(queue, UsageError, "the `all` stage needs a queue");
    std::vector<detail::AlignedBuffer> slots;
    auto destinations = std::make_shared<engine::SlotDestinations>();
    for (std::uint32_t s = 0; s < options.slots; ++s) {
      slots.emplace_back(bytes);
      destinations->push_back({reinterpret_cast<std::uintptr_t>(slots.back().data())});
    }
    engine::SlotStream stream = frame_stream(*queue, container, options.field, destinations, queue::MemoryKind::host);
    result.notes += "engine: " + queue->describe();
    stream.play(std::vector<std::uint64_t>(options.frames.begin(), options.frames.end()));
    for (std::size_t i = 0; i < options.frames.size(); ++i) {
      auto delivery = stream.next(engine::Readiness::done);
      if (!delivery) break;
      const double handed = rec.now();
      rec.frames.push_back({options.frames[i], 0, 0, {}});
      rec.host(i, SpanKind::io, std::max(0.0, handed - delivery->ready_seconds), handed);
      result.stored_bytes += delivery->summary.stored_bytes;
      const bool go_on = show(i, {reinterpret_cast<const float*>(slots[delivery->slot].data()), topology.cell_count()});
      stream.release(delivery->slot);
      if (!go_on) break;
    }
    stream.stop();
  } else {
    FrameReader reader(container, options.field, direct);
    result.notes += "reads: " + reader.describe();
    std::vector<detail::AlignedBuffer> buffers;
    for (unsigned b = 0; b < (doubled ? 2u : 1u); ++b) buffers.emplace_back(bytes);
    std::optional<detail::AlignedBuffer> upload;
    std::vector<std::uint32_t> index;
    if (!flat) index = flatten_index(topology), upload.emplace(bytes);
    ReadAhead reads(reader, bytes, doubled, [&buffers](unsigned b) { return buffers[b].data(); });
    for (std::size_t i = 0; i < options.frames.size(); ++i) {
      rec.frames.push_back({options.frames[i], 0, 0, {}});
      const float* scalars = reinterpret_cast<const float*>(reads.take(i, options.frames, rec));
      result.stored_bytes += stored_bytes_of(container, options.frames[i], options.field);
      if (!flat) {
        const double start = rec.now();
        flatten(scalars, reinterpret_cast<float*>(upload->data()), index);
        rec.host(i, SpanKind::flatten, start, rec.now());
        scalars = reinterpret_cast<const float*>(upload->data());
      }
      if (!show(i, {scalars, topology.cell_count()})) break;
    }
  }
  finish_frames(rec, nullptr, result);
  return result;
}

}  // namespace

PlayResult play(const format::Container& container, const VolumeTopology& topology, GpuVolumeRenderer& renderer,
                engine::Queue* queue, const PlayOptions& options) {
  check_options(container, topology, options);
  renderer.set_transfer_function(options.tf, options.settings);
  if (options.stage == Stage::all) {
    HEADRACE_EXPECT(queue, UsageError, "the `all` stage needs a queue");
    return play_engine_gpu(container, topology, renderer, *queue, options);
  }
  return play_paper_gpu(container, topology, renderer, options);
}

PlayResult play(const format::Container& container, const VolumeTopology& topology, CpuVolumeRenderer& renderer,
                engine::Queue* queue, const PlayOptions& options) {
  check_options(container, topology, options);
  return play_cpu(container, topology, renderer, queue, options);
}

double render_only_seconds(const format::Container& container, const VolumeTopology& topology, GpuVolumeRenderer& renderer,
                           const PlayOptions& options, std::uint32_t frame, unsigned repeats) {
  HEADRACE_EXPECT(repeats >= 1, UsageError, "render at least once");
  renderer.make_current();
  renderer.set_transfer_function(options.tf, options.settings);
  const std::uint64_t bytes = topology.cell_count() * sizeof(float);
  gpu::PinnedBuffer host = gpu::PinnedBuffer::of_huge_pages_if_possible(bytes);
  FrameReader(container, options.field, false).read(frame, host.data(), bytes);
  gpu::DeviceBuffer scalars(bytes);
  GpuRegionState state = renderer.region_state();
  const gpu::Stream stream;
  gpu::check(gpu::require_driver().cuMemcpyHtoDAsync(scalars.pointer(), host.data(), bytes, stream.handle()), "cuMemcpyHtoDAsync");
  renderer.ranges(scalars.pointer(), state, stream.handle());
  renderer.classify(state, stream.handle());
  renderer.render(scalars.pointer(), state, options.camera, stream.handle());  // warm: the first launch loads code
  const gpu::Event start(true), end(true);
  start.record(stream.handle());
  for (unsigned r = 0; r < repeats; ++r) renderer.render(scalars.pointer(), state, options.camera, stream.handle());
  end.record(stream.handle());
  end.synchronize();
  return static_cast<double>(end.elapsed_ms_since(start)) / 1000.0 / repeats;
}

double render_only_seconds(const format::Container& container, const VolumeTopology& topology, CpuVolumeRenderer& renderer,
                           const PlayOptions& options, std::uint32_t frame, unsigned repeats) {
  HEADRACE_EXPECT(repeats >= 1, UsageError, "render at least once");
  const std::uint64_t bytes = topology.cell_count() * sizeof(float);
  detail::AlignedBuffer host(bytes);
  FrameReader(container, options.field, false).read(frame, host.data(), bytes);
  const std::span<const float> scalars(reinterpret_cast<const float*>(host.data()), topology.cell_count());
  const auto visible = renderer.classify(renderer.ranges(scalars), options.tf, options.settings);
  const auto start = Clock::now();
  for (unsigned r = 0; r < repeats; ++r) (void)renderer.render(scalars, visible, options.camera, options.tf, options.settings);
  return seconds_between(start, Clock::now()) / repeats;
}

}  // namespace headrace::workloads::volume
