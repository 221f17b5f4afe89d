#include "headrace/workloads/streamlines/resident_tracer.hpp"

#include <algorithm>
#include <memory>


#include "headrace/detail/aligned_buffer.hpp"
#include "headrace/detail/parallel_for.hpp"
#include "headrace/detail/seconds.hpp"
#include "headrace/error.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/kernel_module.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/stream.hpp"
#include "headrace/engine/queue.hpp"
#include "headrace/engine/slot_stream.hpp"
#include "headrace/workloads/streamlines/blocked_field.hpp"
#include "headrace/workloads/streamlines/hilbert_field.hpp"
#include "headrace/workloads/streamlines/resident_lines.hpp"
#include "resident_kernel_image.hpp"

namespace headrace::workloads::streamlines {
namespace {

using Clock = headrace::detail::SteadyClock;
using headrace::detail::seconds_since;

// Where each unit lies in the file.
struct UnitTable {
  std::uint64_t unit_bytes = 0;
  std::vector<std::uint64_t> offset, size;
};

// One round's inputs and outputs, in host memory.
struct RoundState {
  std::uint32_t round = 0;
  std::uint64_t first_line = 0, window = 0;  // the half-lines that run
  std::vector<std::int32_t> slot_of_unit;    // -1: absent
  std::vector<std::uint32_t> wanted, last_used;
};

// Runs rounds over half-lines with the cache's pool in host or GPU memory.
template <typename Units>
class RoundRunner {
 public:
  virtual ~RoundRunner() = default;
  [[nodiscard]] virtual queue::MemoryKind memory() const = 0;
  [[nodiscard]] virtual std::uintptr_t slot_address(std::uint32_t slot) const = 0;
  // Runs one round over the window; fills state.wanted and state.last_used.
  virtual RoundCounters run(RoundState& state) = 0;
  // After the queue loaded units up to `fence`: the next round must see them.
  virtual void loaded(const engine::Queue& queue, queue::FenceId fence) = 0;
  // The half-lines and their points after the last round.
  virtual void collect(std::vector<HalfLine>& lines, std::vector<TracedPoint>& points) = 0;
};

template <typename Units>
RoundParams<Units> round_params(const Units& units, const TraceOptions& options, std::uint64_t unit_bytes) {
  RoundParams<Units> params;
  params.units = units;
  params.options = options;
  params.cache.unit_floats = unit_bytes / sizeof(float);
  params.point_capacity = options.max_steps;
  return params;
}

template <typename Units>
RoundParams<Units> window_of(RoundParams<Units> params, const RoundState& state) {
  params.cache.round = state.round;
  params.first_line = state.first_line;
  params.line_count = state.window;
  return params;
}

// The reference: the same rounds on CPU threads over host memory.
template <typename Units>
class HostRounds final : public RoundRunner<Units> {
 public:
  HostRounds(const Units& units, const TraceOptions& options, std::uint64_t unit_bytes, std::uint64_t slots,
             std::vector<HalfLine> lines, unsigned threads)
      : params_(round_params(units, options, unit_bytes)),
        unit_bytes_(unit_bytes),
        pool_(slots * unit_bytes),
        lines_(std::move(lines)),
        points_(lines_.size() * options.max_steps),
        threads_(threads) {}

  [[nodiscard]] queue::MemoryKind memory() const override { return queue::MemoryKind::host; }
  [[nodiscard]] std::uintptr_t slot_address(std::uint32_t slot) const override {
    return reinterpret_cast<std::uintptr_t>(pool_.data() + std::uint64_t{slot} * unit_bytes_);
  }
  RoundCounters run(RoundState& state) override {
    std::fill(state.wanted.begin(), state.wanted.end(), 0u);
    RoundCounters counters;
    RoundParams<Units> params = window_of(params_, state);
    params.cache.slot_of_unit = state.slot_of_unit.data();
    params.cache.pool = reinterpret_cast<const float*>(pool_.data());
    params.cache.wanted = state.wanted.data();
    params.cache.last_used = state.last_used.data();
    params.lines = lines_.data();
    params.points = points_.data();
    params.counters = &counters;
    headrace::detail::parallel_for(params.line_count, threads_, [&](std::uint64_t k) { advance_resident_line(params, k); });
    return counters;
  }
  void loaded(const engine::Queue&, queue::FenceId) override {}  // the queue's wait saw the bytes land
  void collect(std::vector<HalfLine>& lines, std::vector<TracedPoint>& points) override {
    lines = std::move(lines_);
    points = std::move(points_);
  }

 private:
  RoundParams<Units> params_;
  std::uint64_t unit_bytes_;
  headrace::detail::AlignedBuffer pool_;
  std::vector<HalfLine> lines_;
  std::vector<TracedPoint> points_;
  unsigned threads_;
};

template <typename Units>
constexpr const char* kernel_name();
template <>
constexpr const char* kernel_name<BlockLayout>() { return "headrace_advance_blocks"; }
template <>
constexpr const char* kernel_name<HilbertUnits>() { return "headrace_advance_hilbert"; }

// The GPU: the pool, the table and the lines in device memory, one thread per half-line.
template <typename Units>
class DeviceRounds final : public RoundRunner<Units> {
 public:
  DeviceRounds(int ordinal, const Units& units, const TraceOptions& options, std::uint64_t unit_bytes,
               std::uint64_t slots, std::uint64_t unit_count, const std::vector<HalfLine>& lines)
      : device_(ordinal),
        module_((device_.make_current(), resident_kernel_image()), "the GPU tracer's kernels (resident_rounds.cu)",
                "trace with --device cpu"),
        kernel_(module_.function(kernel_name<Units>())),
        params_(round_params(units, options, unit_bytes)),
        unit_bytes_(unit_bytes),
        pool_(slots * unit_bytes),
        table_(unit_count * sizeof(std::int32_t)),
        wanted_(unit_count * sizeof(std::uint32_t)),
        last_used_(unit_count * sizeof(std::uint32_t)),
        lines_(lines.size() * sizeof(HalfLine)),
        points_(lines.size() * options.max_steps * sizeof(TracedPoint)),
        counters_(sizeof(RoundCounters)) {
    const gpu::CudaDriver& cuda = gpu::require_driver();
    gpu::check(cuda.cuMemcpyHtoDAsync(lines_.pointer(), lines.data(), lines_.size_bytes(), stream_.handle()), "cuMemcpyHtoDAsync");
    gpu::check(cuda.cuMemsetD8Async(last_used_.pointer(), 0, last_used_.size_bytes(), stream_.handle()), "cuMemsetD8Async");
    params_.cache.slot_of_unit = reinterpret_cast<const std::int32_t*>(table_.pointer());
    params_.cache.pool = reinterpret_cast<const float*>(pool_.pointer());
    params_.cache.wanted = reinterpret_cast<std::uint32_t*>(wanted_.pointer());
    params_.cache.last_used = reinterpret_cast<std::uint32_t*>(last_used_.pointer());
    params_.lines = reinterpret_cast<HalfLine*>(lines_.pointer());
    params_.points = reinterpret_cast<TracedPoint*>(points_.pointer());
    params_.counters = reinterpret_cast<RoundCounters*>(counters_.pointer());
    stream_.synchronize();
  }

  [[nodiscard]] queue::MemoryKind memory() const override { return queue::MemoryKind::device; }
  [[nodiscard]] std::uintptr_t slot_address(std::uint32_t slot) const override {
    return pool_.pointer() + std::uint64_t{slot} * unit_bytes_;
  }
  RoundCounters run(RoundState& state) override {
    const gpu::CudaDriver& cuda = gpu::require_driver();
    const gpu::CUstream stream = stream_.handle();
    device_.make_current();
    gpu::check(cuda.cuMemcpyHtoDAsync(table_.pointer(), state.slot_of_unit.data(), table_.size_bytes(), stream),
               "cuMemcpyHtoDAsync");
    gpu::check(cuda.cuMemsetD8Async(wanted_.pointer(), 0, wanted_.size_bytes(), stream), "cuMemsetD8Async");
    gpu::check(cuda.cuMemsetD8Async(counters_.pointer(), 0, counters_.size_bytes(), stream), "cuMemsetD8Async");
    RoundParams<Units> params = window_of(params_, state);
    void* args[] = {&params};
    gpu::launch_1d(kernel_, params.line_count, 128, stream, args);
    RoundCounters counters;
    gpu::check(cuda.cuMemcpyDtoHAsync(state.wanted.data(), wanted_.pointer(), wanted_.size_bytes(), stream), "cuMemcpyDtoHAsync");
    gpu::check(cuda.cuMemcpyDtoHAsync(state.last_used.data(), last_used_.pointer(), last_used_.size_bytes(), stream),
               "cuMemcpyDtoHAsync");
    gpu::check(cuda.cuMemcpyDtoHAsync(&counters, counters_.pointer(), sizeof counters, stream), "cuMemcpyDtoHAsync");
    stream_.synchronize();
    return counters;
  }
  void loaded(const engine::Queue& queue, queue::FenceId fence) override {
    queue.wait_on_stream(fence, reinterpret_cast<std::uintptr_t>(stream_.handle()));
  }
  void collect(std::vector<HalfLine>& lines, std::vector<TracedPoint>& points) override {
    lines.resize(lines_.size_bytes() / sizeof(HalfLine));
    points.resize(points_.size_bytes() / sizeof(TracedPoint));
    stream_.synchronize();
    gpu::copy_to_host(lines.data(), lines_.pointer(), lines_.size_bytes());
    gpu::copy_to_host(points.data(), points_.pointer(), points_.size_bytes());
  }

 private:
  gpu::Device device_;
  gpu::KernelModule module_;
  gpu::CUfunction kernel_;
  gpu::Stream stream_;
  RoundParams<Units> params_;
  std::uint64_t unit_bytes_;
  gpu::DeviceBuffer pool_, table_, wanted_, last_used_, lines_, points_, counters_;
};

// The cache's bookkeeping between rounds: which unit each slot holds, and which units to load next.
class SlotTable {
 public:
  SlotTable(std::uint64_t slots, RoundState& state) : owner_(slots, -1), loaded_round_(slots, 0), state_(&state) {
    for (std::uint64_t s = slots; s-- > 0;) free_.push_back(static_cast<std::uint32_t>(s));
  }

  // Units to load for the wanted ones, most wanted first, each given a slot: free slots, then slots
  // whose unit the round just run neither read nor received (least recent first). When that leaves
  // none, `forced`: the least recent of all, up to half the cache.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> assign(const std::vector<std::uint64_t>& wanted,
                                                              std::uint64_t& evictions, bool& forced) {
    std::vector<std::uint32_t> stale, fresh;
    for (std::uint32_t s = 0; s < owner_.size(); ++s)
      if (owner_[s] >= 0) (recency(s) < state_->round ? stale : fresh).push_back(s);
    auto least_recent = [&](std::uint32_t a, std::uint32_t b) {
      return std::pair(recency(a), owner_[a]) < std::pair(recency(b), owner_[b]);
    };
    std::sort(stale.begin(), stale.end(), least_recent);
    std::sort(fresh.begin(), fresh.end(), least_recent);
    std::uint64_t room = free_.size() + stale.size();
    forced = room == 0;
    if (forced) room = std::max<std::uint64_t>(1, owner_.size() / 2);
    std::vector<std::pair<std::uint64_t, std::uint32_t>> loads;
    std::size_t next_stale = 0, next_fresh = 0;
    for (const std::uint64_t unit : wanted) {
      if (loads.size() == room) break;
      std::uint32_t slot = 0;
      if (!free_.empty()) {
        slot = free_.back();
        free_.pop_back();
      } else {
        slot = next_stale < stale.size() ? stale[next_stale++] : fresh[next_fresh++];
        state_->slot_of_unit[static_cast<std::uint64_t>(owner_[slot])] = -1;
        ++evictions;
      }
      owner_[slot] = static_cast<std::int64_t>(unit);
      loaded_round_[slot] = state_->round;
      state_->slot_of_unit[unit] = static_cast<std::int32_t>(slot);
      loads.emplace_back(unit, slot);
    }
    return loads;
  }

 private:
  // The last round that read the slot's unit, or after which it was loaded.
  [[nodiscard]] std::uint32_t recency(std::uint32_t slot) const {
    return std::max(state_->last_used[static_cast<std::uint64_t>(owner_[slot])], loaded_round_[slot]);
  }

  std::vector<std::int64_t> owner_;          // per slot: its unit, or -1
  std::vector<std::uint32_t> loaded_round_;  // per slot: the round after which its unit was loaded
  std::vector<std::uint32_t> free_;
  RoundState* state_;
};

// Units wanted by the last round, most wanted first (ties: lower unit first, so runs repeat).
std::vector<std::uint64_t> wanted_units(const RoundState& state) {
  std::vector<std::uint64_t> units;
  for (std::uint64_t u = 0; u < state.wanted.size(); ++u)
    if (state.wanted[u] != 0) units.push_back(u);
  std::stable_sort(units.begin(), units.end(),
                   [&](std::uint64_t a, std::uint64_t b) { return state.wanted[a] > state.wanted[b]; });
  return units;
}

// Seed i's half-lines: both directions take 2i (backward) and 2i + 1 (forward); one direction takes i.
std::vector<HalfLine> start_lines(const std::vector<Vec3>& seeds, const TraceOptions& options) {
  std::vector<HalfLine> lines;
  for (const Vec3& seed : seeds) {
    if (options.direction != Direction::forward) lines.push_back(start_half_line(seed, -1.0f, options));
    if (options.direction != Direction::backward) lines.push_back(start_half_line(seed, 1.0f, options));
  }
  return lines;
}

Polylines assemble(const std::vector<Vec3>& seeds, const TraceOptions& options, const std::vector<HalfLine>& lines,
                   const std::vector<TracedPoint>& points) {
  Polylines out;
  out.lines.resize(seeds.size());
  const std::size_t per_seed = options.direction == Direction::both ? 2 : 1;
  for (std::size_t s = 0; s < seeds.size(); ++s) {
    std::size_t next = s * per_seed;
    Streamline& line = out.lines[s];
    if (options.direction != Direction::forward) {
      const HalfLine& back = lines[next];
      const TracedPoint* first = points.data() + next * options.max_steps;
      for (std::uint32_t k = back.steps; k-- > 0;) {
        out.points.push_back(first[k].p);
        out.times.push_back(first[k].time);
      }
      line.backward_end = back.end;
      ++next;
    }
    out.points.push_back(seeds[s]);
    out.times.push_back(0.0f);
    if (options.direction != Direction::backward) {
      const HalfLine& forward = lines[next];
      const TracedPoint* first = points.data() + next * options.max_steps;
      for (std::uint32_t k = 0; k < forward.steps; ++k) {
        out.points.push_back(first[k].p);
        out.times.push_back(first[k].time);
      }
      line.forward_end = forward.end;
    }
    out.offsets.push_back(static_cast<std::int64_t>(out.points.size()));
  }
  return out;
}

// Rounds of a single half-line without progress before the cache is declared too small for one step.
constexpr unsigned max_idle_rounds = 32;

template <typename Units>
ContainerTraceRun trace_rounds(const FlowField& flow, const Units& units, const UnitTable& table,
                               const std::vector<Vec3>& seeds, const ContainerTraceOptions& options) {
  const TraceOptions& trace = options.trace;
  HEADRACE_EXPECT(trace.step_size > 0 && trace.max_steps > 0, UsageError, "streamlines need a positive step size and step count");
  const std::uint64_t unit_count = table.offset.size();
  const std::uint64_t slots = std::min<std::uint64_t>(options.cache_bytes / table.unit_bytes, unit_count);
  HEADRACE_EXPECT(slots >= std::min<std::uint64_t>(8, unit_count), UsageError,
                  "the resident cache needs room for 8 units of " + std::to_string(table.unit_bytes) + " bytes, got " +
                      std::to_string(options.cache_bytes) + " bytes");
  const std::string& path = flow.container.path();

  std::vector<HalfLine> lines = start_lines(seeds, trace);
  const std::uint64_t line_count = lines.size();
  std::unique_ptr<RoundRunner<Units>> runner;
  if (options.device >= 0)
    runner = std::make_unique<DeviceRounds<Units>>(options.device, units, trace, table.unit_bytes, slots, unit_count, lines);
  else
    runner = std::make_unique<HostRounds<Units>>(units, trace, table.unit_bytes, slots, std::move(lines), options.threads);
  // Made after the runner, so destroyed before it: the queue waits for its reads into the pool.
  engine::QueueOptions queue_options = engine::QueueOptions::from_environment();
  queue_options.backend = options.backend;
  queue_options.device = options.device;
  engine::Queue queue(queue_options);
  const queue::FileId file = queue.add_file(path);
  // The slots are the resident cache's: the slot table picks which unit goes where (load()).
  engine::SlotStreamOptions slot_options;
  slot_options.slots = static_cast<std::uint32_t>(slots);
  slot_options.name = [&path, &table](std::uint64_t unit) {
    return path + ": offset " + std::to_string(table.offset[unit]) + ": velocity unit " + std::to_string(unit);
  };
  engine::SlotStream loads(
      queue,
      [&](std::uint64_t unit, std::uint32_t slot) {
        queue::Request request = queue::range_request(file, table.offset[unit], table.size[unit], runner->memory(),
                                                      runner->slot_address(slot));
        request.label = slot_options.name(unit);
        return std::vector<queue::Request>{std::move(request)};
      },
      slot_options);

  ContainerTraceRun run;
  run.layout = flow.layout;
  run.unit_bytes = table.unit_bytes;
  ResidentStats& stats = run.resident;
  stats.slots = slots;
  RoundState state{0, 0, line_count, std::vector<std::int32_t>(unit_count, -1), std::vector<std::uint32_t>(unit_count, 0),
                   std::vector<std::uint32_t>(unit_count, 0)};
  SlotTable slot_table(slots, state);
  const auto start = Clock::now();
  auto told_at = start;
  bool stopped = false;
  std::uint64_t unfinished = line_count;
  for (unsigned idle = 0; unfinished > 0;) {
    if (options.progress && seconds_since(told_at) >= 0.1) {
      told_at = Clock::now();
      // Told in lines (seeds): a line of both directions is two half-lines here.
      if (!options.progress((line_count - unfinished) * seeds.size() / std::max<std::uint64_t>(line_count, 1), seeds.size())) {
        stopped = true;
        break;
      }
    }
    ++state.round;
    const auto advance_start = Clock::now();
    const RoundCounters counters = runner->run(state);
    stats.advance_seconds += seconds_since(advance_start);
    ++stats.rounds;
    unfinished -= counters.ended;
    const std::vector<std::uint64_t> wanted = wanted_units(state);
    if (wanted.empty()) {  // every line of the window has ended (those before it had): the next lines
      state.first_line += state.window;
      state.window = std::min(state.window, line_count - std::min(line_count, state.first_line));
      continue;
    }
    // Lines that all wait while the cache cannot hold what they need at once thrash: run fewer at once
    // (an operating system lowers its degree of multiprogramming so), and more again once they move.
    const bool progress = counters.steps + counters.ended > 0;
    if (!progress) state.window = std::max<std::uint64_t>(1, state.window / 2);
    idle = progress || state.window > 1 ? 0 : idle + 1;
    HEADRACE_EXPECT(idle < max_idle_rounds, UsageError,
                    path + ": the resident cache of " + std::to_string(slots) + " units of " + std::to_string(table.unit_bytes) +
                        " bytes cannot hold the units of one step of one line; give it more bytes");
    const auto load_start = Clock::now();
    bool forced = false;
    for (const auto& [unit, slot] : slot_table.assign(wanted, stats.evictions, forced)) {
      loads.load(unit, static_cast<std::uint32_t>(slot));
      ++stats.units_loaded;
      stats.bytes_read += table.size[unit];
    }
    if (progress && !forced) state.window = std::min(line_count - state.first_line, 2 * state.window);
    const queue::FenceId fence = loads.wait_loaded();
    runner->loaded(queue, fence);
    stats.load_seconds += seconds_since(load_start);
  }
  std::vector<HalfLine> ended;
  std::vector<TracedPoint> points;
  runner->collect(ended, points);
  if (stopped)
    for (HalfLine& line : ended)
      if (!line.ended) line.end = Termination::stopped;
  run.lines = assemble(seeds, trace, ended, points);
  run.seconds = seconds_since(start);
  return run;
}

}  // namespace

ContainerTraceRun trace_resident(const FlowField& flow, const std::vector<Vec3>& seeds,
                                 const ContainerTraceOptions& options) {
  if (flow.layout == "blocks") {
    const BlockLayout layout = block_layout_of(flow.container);
    UnitTable table{layout.block_points() * point_bytes, block_offsets(flow.container, flow.frame, flow.field, layout), {}};
    table.size.assign(table.offset.size(), table.unit_bytes);
    return trace_rounds(flow, layout, table, seeds, options);
  }
  const HilbertLayout layout = hilbert_layout_of(flow.container);
  const std::uint64_t unit_bytes = std::uint64_t{options.unit_pages} * page_bytes;
  check_unit_bytes(unit_bytes);
  const FieldRange range = contiguous_field_range(flow.container, flow.frame, flow.field);
  UnitTable table{unit_bytes, {}, {}};
  for (std::uint64_t offset = range.start; offset < range.end; offset += unit_bytes) {
    table.offset.push_back(offset);
    table.size.push_back(std::min(unit_bytes, range.end - offset));
  }
  return trace_rounds(flow, HilbertUnits{layout, unit_bytes / point_bytes}, table, seeds, options);
}

}  // namespace headrace::workloads::streamlines
