// Velocity units read into the GPU tracer's resident cache through the engine's queue (private to it and
// HandOffTrace): where each unit lies in the file and the loads into a round runner's slots.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "headrace/error.hpp"
#include "headrace/engine/queue.hpp"
#include "headrace/engine/slot_stream.hpp"
#include "headrace/workloads/streamlines/flow_field.hpp"
#include "headrace/workloads/streamlines/trace_container.hpp"
#include "headrace/workloads/streamlines/unit_layouts.hpp"
#include "round_runner.hpp"

namespace headrace::workloads::streamlines::resident {

// Where each unit lies in the file.
struct UnitTable {
  std::uint64_t unit_bytes = 0;
  std::vector<std::uint64_t> offset, size;
};

// The units of frame `frame` of a flow in native blocks: one block each, where the frame keeps it.
[[nodiscard]] UnitTable unit_table(const FlowField& flow, const BlockLayout& layout, std::uint32_t frame);
// The units of frame `frame` of a flow in the Hilbert layout: runs of the units' bytes of its field, one
// after another (the last one shorter where they do not divide it).
[[nodiscard]] UnitTable unit_table(const FlowField& flow, const HilbertUnits& units, std::uint32_t frame);

// How a velocity unit names itself in requests and errors.
[[nodiscard]] std::string unit_name(const std::string& path, const UnitTable& table, std::uint64_t unit);

// The queue a tracer reads with: the environment's settings, the backend asked for (none: the engine's read
// path) and the device its slots lie on (-1: the host).
[[nodiscard]] inline engine::QueueOptions tracer_queue_options(std::optional<io::BackendKind> backend, int device) {
  engine::QueueOptions q = engine::QueueOptions::from_environment();
  q.backend = backend;
  q.device = device;
  return q;
}

// The engine's queue and the slot stream that read velocity units into a pool's slots: what loads the
// resident cache, for one tracer and for a rank of a job alike. The slots are the cache's: its caller picks
// which unit goes where (load()).
class UnitLoads {
 public:
  // path and table must outlive the loads.
  UnitLoads(const std::string& path, const UnitTable& table, SlotPool& runner, const engine::QueueOptions& options,
            std::uint64_t slots)
      : queue_(options),
        file_(queue_.add_file(path)),
        loads_(
            queue_,
            [this, &path, &table, &runner](std::uint64_t unit, std::uint32_t slot) {
              queue::Request request = queue::range_request(file_, table.offset[unit], table.size[unit], runner.memory(),
                                                            runner.slot_address(slot));
              request.label = unit_name(path, table, unit);
              return std::vector<queue::Request>{std::move(request)};
            },
            slot_options(path, table, slots)) {}

  void load(std::uint64_t unit, std::uint32_t slot) { loads_.load(unit, slot); }
  // Waits for every load since the last; the runner's next round sees them.
  void wait(SlotPool& runner) { runner.loaded(queue_, loads_.wait_loaded()); }
  // Its queue's GPU context current on the calling thread, which may then close the loads (and let go of what
  // they page-locked) off the tracer's own.
  void make_current() const { queue_.make_current(); }

 private:
  static engine::SlotStreamOptions slot_options(const std::string& path, const UnitTable& table, std::uint64_t slots) {
    engine::SlotStreamOptions o;
    o.slots = static_cast<std::uint32_t>(slots);
    o.name = [&path, &table](std::uint64_t unit) { return unit_name(path, table, unit); };
    return o;
  }

  engine::Queue queue_;
  queue::FileId file_;
  engine::SlotStream loads_;
};

// Whole frames of a series' velocity read into a pool of frame slots (the pathline tracer when its cache
// holds two frames or more): slot s holds a frame's units at pool slots s * units_per_frame onward, each
// velocity chunk where its first element falls. Delivered in the order played, as many ahead as the slots
// hold, so the next frames load while the paths step between the two before them.
class FrameLoads {
 public:
  // container must outlive the loads.
  FrameLoads(const format::Container& container, std::uint32_t field, SlotPool& pool, const engine::QueueOptions& options,
             std::uint32_t frame_slots, std::uint64_t units_per_frame)
      : queue_(options),
        file_(queue_.add_file(container.path())),
        pool_(pool),
        loads_(
            queue_,
            [this, &container, field, units_per_frame](std::uint64_t frame, std::uint32_t slot) {
              std::vector<queue::Request> requests;
              const std::uintptr_t base = pool_.slot_address(std::uint64_t{slot} * units_per_frame);
              const std::uint64_t element_bytes = container.fields()[field].element_bytes();
              std::uint64_t number = 0;
              for (const auto& chunk : container.chunks_of(static_cast<std::uint32_t>(frame), field)) {
                queue::Request request = queue::chunk_request(
                    file_, chunk, {pool_.memory(), base + chunk.first_element * element_bytes, chunk.raw_size});
                request.label = queue::chunk_label(container, static_cast<std::uint32_t>(frame), field, number++, chunk);
                requests.push_back(std::move(request));
              }
              return requests;
            },
            slot_options(container.path(), frame_slots)) {}

  void play(std::vector<std::uint64_t> frames) { loads_.play(std::move(frames)); }
  // The next frame once the pool's next round can read it (a GPU's stream waits for its copies).
  [[nodiscard]] engine::SlotDelivery next() {
    const bool device = pool_.memory() == queue::MemoryKind::device;
    std::optional<engine::SlotDelivery> delivery = loads_.next(device ? engine::Readiness::issued : engine::Readiness::done);
    HEADRACE_EXPECT(delivery.has_value(), Error, "the frames to trace were all delivered");
    pool_.loaded(queue_, delivery->fence);
    return *delivery;
  }
  // The frame in `slot` is read no more (the rounds that read it have finished).
  void release(std::uint32_t slot) { loads_.release(slot); }
  // As UnitLoads::make_current.
  void make_current() const { queue_.make_current(); }

 private:
  static engine::SlotStreamOptions slot_options(const std::string& path, std::uint32_t slots) {
    engine::SlotStreamOptions o;
    o.slots = slots;
    o.name = [path](std::uint64_t frame) { return path + ": frame " + std::to_string(frame) + "'s velocity"; };
    return o;
  }

  engine::Queue queue_;
  queue::FileId file_;
  SlotPool& pool_;
  engine::SlotStream loads_;
};

}  // namespace headrace::workloads::streamlines::resident
