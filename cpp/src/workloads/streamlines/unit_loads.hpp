// Velocity units read into the GPU tracer's resident cache through the engine's queue (private to it and
// HandOffTrace): where each unit lies in the file and the loads into a round runner's slots.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// The units of a flow in native blocks: one block each, where the frame keeps it.
[[nodiscard]] UnitTable block_table(const FlowField& flow, const BlockLayout& layout);

// How a velocity unit names itself in requests and errors.
[[nodiscard]] std::string unit_name(const std::string& path, const UnitTable& table, std::uint64_t unit);

// The engine's queue and the slot stream that read velocity units into a runner's slots: what loads the
// resident cache, for one tracer and for a rank of a job alike. The slots are the cache's: its caller picks
// which unit goes where (load()).
template <typename Units>
class UnitLoads {
 public:
  // path and table must outlive the loads.
  UnitLoads(const std::string& path, const UnitTable& table, RoundRunner<Units>& runner, const ContainerTraceOptions& options,
            std::uint64_t slots)
      : queue_(queue_options(options)),
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
  void wait(RoundRunner<Units>& runner) { runner.loaded(queue_, loads_.wait_loaded()); }

 private:
  static engine::QueueOptions queue_options(const ContainerTraceOptions& options) {
    engine::QueueOptions q = engine::QueueOptions::from_environment();
    q.backend = options.backend;
    q.device = options.device;
    return q;
  }
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

}  // namespace headrace::workloads::streamlines::resident
