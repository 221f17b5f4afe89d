#include "headrace/workloads/streamlines/resident_tracer.hpp"

#include <algorithm>
#include <memory>
#include <numeric>


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
  // Other half-lines from now on (the pool stays): a rank's lines change between a job's rounds.
  virtual void restart(const std::vector<HalfLine>& lines) = 0;
  // Per half-line, the unit it waits for after the last round (all ones: none).
  virtual std::vector<std::uint64_t> waits_for() = 0;
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
        waits_for_(lines_.size()),
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
    params.waits_for = waits_for_.data();
    params.counters = &counters;
    headrace::detail::parallel_for(params.line_count, threads_, [&](std::uint64_t k) { advance_resident_line(params, k); });
    return counters;
  }
  void loaded(const engine::Queue&, queue::FenceId) override {}  // the queue's wait saw the bytes land
  void collect(std::vector<HalfLine>& lines, std::vector<TracedPoint>& points) override {
    lines = std::move(lines_);
    points = std::move(points_);
  }
  void restart(const std::vector<HalfLine>& lines) override {
    lines_ = lines;
    points_.resize(lines_.size() * params_.point_capacity);
    waits_for_.resize(lines_.size());
  }
  std::vector<std::uint64_t> waits_for() override { return waits_for_; }

 private:
  RoundParams<Units> params_;
  std::uint64_t unit_bytes_;
  headrace::detail::AlignedBuffer pool_;
  std::vector<HalfLine> lines_;
  std::vector<TracedPoint> points_;
  std::vector<std::uint64_t> waits_for_;
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
        counters_(sizeof(RoundCounters)) {
    const gpu::CudaDriver& cuda = gpu::require_driver();
    gpu::check(cuda.cuMemsetD8Async(last_used_.pointer(), 0, last_used_.size_bytes(), stream_.handle()), "cuMemsetD8Async");
    params_.cache.slot_of_unit = reinterpret_cast<const std::int32_t*>(table_.pointer());
    params_.cache.pool = reinterpret_cast<const float*>(pool_.pointer());
    params_.cache.wanted = reinterpret_cast<std::uint32_t*>(wanted_.pointer());
    params_.cache.last_used = reinterpret_cast<std::uint32_t*>(last_used_.pointer());
    params_.counters = reinterpret_cast<RoundCounters*>(counters_.pointer());
    restart(lines);
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
    lines.resize(count_);
    points.resize(count_ * params_.point_capacity);
    stream_.synchronize();
    gpu::copy_to_host(lines.data(), lines_.pointer(), lines.size() * sizeof(HalfLine));
    gpu::copy_to_host(points.data(), points_.pointer(), points.size() * sizeof(TracedPoint));
  }
  void restart(const std::vector<HalfLine>& lines) override {
    device_.make_current();
    count_ = lines.size();
    const std::uint64_t line_bytes = std::max<std::uint64_t>(count_, 1) * sizeof(HalfLine);
    if (lines_.size_bytes() < line_bytes) {  // grown only: a rank's lines come and go
      lines_ = gpu::DeviceBuffer(line_bytes);
      points_ = gpu::DeviceBuffer(std::max<std::uint64_t>(count_, 1) * params_.point_capacity * sizeof(TracedPoint));
      waits_for_ = gpu::DeviceBuffer(std::max<std::uint64_t>(count_, 1) * sizeof(std::uint64_t));
    }
    params_.lines = reinterpret_cast<HalfLine*>(lines_.pointer());
    params_.points = reinterpret_cast<TracedPoint*>(points_.pointer());
    params_.waits_for = reinterpret_cast<std::uint64_t*>(waits_for_.pointer());
    if (count_ > 0)
      gpu::check(gpu::require_driver().cuMemcpyHtoDAsync(lines_.pointer(), lines.data(), count_ * sizeof(HalfLine), stream_.handle()),
                 "cuMemcpyHtoDAsync");
    stream_.synchronize();
  }
  std::vector<std::uint64_t> waits_for() override {
    std::vector<std::uint64_t> out(count_);
    stream_.synchronize();
    if (count_ > 0) gpu::copy_to_host(out.data(), waits_for_.pointer(), count_ * sizeof(std::uint64_t));
    return out;
  }

 private:
  gpu::Device device_;
  gpu::KernelModule module_;
  gpu::CUfunction kernel_;
  gpu::Stream stream_;
  RoundParams<Units> params_;
  std::uint64_t unit_bytes_;
  gpu::DeviceBuffer pool_, table_, wanted_, last_used_, counters_, lines_, points_, waits_for_;
  std::uint64_t count_ = 0;  // half-lines now
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

// How a velocity unit names itself in requests and errors.
std::string unit_name(const std::string& path, const UnitTable& table, std::uint64_t unit) {
  return path + ": offset " + std::to_string(table.offset[unit]) + ": velocity unit " + std::to_string(unit);
}

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

// The units of a flow in native blocks: one block each, where the frame keeps it.
UnitTable block_table(const FlowField& flow, const BlockLayout& layout) {
  UnitTable table{layout.block_points() * point_bytes, block_offsets(flow.container, flow.frame, flow.field, layout), {}};
  table.size.assign(table.offset.size(), table.unit_bytes);
  return table;
}

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
  UnitLoads<Units> loads(path, table, *runner, options, slots);

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
    loads.wait(*runner);
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
    return trace_rounds(flow, layout, block_table(flow, layout), seeds, options);
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

struct HandOffTrace::State {
  std::string path;
  TraceOptions trace;
  BlockLayout layout;
  UnitTable table;
  std::uint32_t rank = 0, ranks = 1;
  std::uint64_t planes = 1, per_plane = 1;  // planes of blocks along z, blocks in one
  std::unique_ptr<RoundRunner<BlockLayout>> runner;
  RoundState round;
  std::vector<HandedLine> held;
  std::vector<TracedSegment> segments;
  std::vector<TracedPoint> points;
  std::vector<HandedLine> ended;
  ResidentStats stats;
};

HandOffTrace::HandOffTrace(const FlowField& flow, std::uint32_t rank, std::uint32_t ranks, const ContainerTraceOptions& options)
    : state_(std::make_unique<State>()) {
  State& st = *state_;
  st.path = flow.container.path();
  HEADRACE_EXPECT(flow.layout == "blocks", UsageError,
                  st.path + ": handing lines between ranks needs native blocks (a Hilbert unit has no neighbours to hold); "
                            "convert it with --layout blocks, or let every rank read any unit");
  st.trace = options.trace;
  HEADRACE_EXPECT(st.trace.step_size > 0 && st.trace.max_steps > 0, UsageError, "streamlines need a positive step size and step count");
  st.layout = block_layout_of(flow.container);
  st.table = block_table(flow, st.layout);
  st.rank = rank, st.ranks = ranks;
  const auto& dims = st.layout.grid.dims;
  st.planes = units_along(dims[2], st.layout.block[2]);
  st.per_plane = units_along(dims[0], st.layout.block[0]) * units_along(dims[1], st.layout.block[1]);
  HEADRACE_EXPECT(ranks >= 1 && rank < ranks && ranks <= st.planes, UsageError,
                  st.path + ": " + std::to_string(ranks) + " ranks share " + std::to_string(st.planes) +
                      " planes of blocks along z: at most one rank a plane");
  // Its planes and the plane either side: every block next to one of its own (a rank owns the planes p
  // with p * ranks / planes == rank, owner_of's rule).
  const std::uint64_t units = st.table.offset.size();
  st.round = RoundState{0, 0, 0, std::vector<std::int32_t>(units, -1), std::vector<std::uint32_t>(units, 0),
                        std::vector<std::uint32_t>(units, 0)};
  const auto first_plane = [&](std::uint64_t r) { return (r * st.planes + ranks - 1) / ranks; };
  const std::uint64_t first = std::max<std::uint64_t>(first_plane(rank), 1) - 1;
  const std::uint64_t last = std::min<std::uint64_t>(first_plane(rank + 1) + 1, st.planes);
  std::vector<std::uint64_t> resident(static_cast<std::size_t>((last - first) * st.per_plane));
  std::iota(resident.begin(), resident.end(), first * st.per_plane);
  const std::uint64_t bytes = resident.size() * st.table.unit_bytes;
  HEADRACE_EXPECT(bytes <= options.cache_bytes, UsageError,
                  st.path + ": rank " + std::to_string(rank) + "'s blocks and their neighbours take " + std::to_string(bytes) +
                      " bytes, more than its cache of " + std::to_string(options.cache_bytes) + ": run more ranks or give more bytes");
  const std::uint64_t slots = std::max<std::uint64_t>(resident.size(), 1);
  if (options.device >= 0)
    st.runner = std::make_unique<DeviceRounds<BlockLayout>>(options.device, st.layout, st.trace, st.table.unit_bytes, slots, units,
                                                             std::vector<HalfLine>{});
  else
    st.runner = std::make_unique<HostRounds<BlockLayout>>(st.layout, st.trace, st.table.unit_bytes, slots, std::vector<HalfLine>{},
                                                           options.threads);
  const auto load_start = Clock::now();
  {
    UnitLoads<BlockLayout> loads(st.path, st.table, *st.runner, options, slots);
    for (std::uint32_t slot = 0; slot < resident.size(); ++slot) {
      loads.load(resident[slot], slot);
      st.round.slot_of_unit[resident[slot]] = static_cast<std::int32_t>(slot);
    }
    loads.wait(*st.runner);
  }
  st.stats.slots = resident.size();
  st.stats.units_loaded = resident.size();
  st.stats.bytes_read = bytes;
  st.stats.load_seconds = seconds_since(load_start);
}

HandOffTrace::~HandOffTrace() = default;

std::uint32_t HandOffTrace::owner_of(std::uint64_t unit) const {
  const State& st = *state_;
  return static_cast<std::uint32_t>(unit / st.per_plane * st.ranks / st.planes);  // runs of whole planes
}

std::uint64_t HandOffTrace::resident_blocks() const { return state_->stats.slots; }

void HandOffTrace::start(const std::vector<Vec3>& seeds, std::uint64_t first_seed) {
  const std::vector<HalfLine> lines = start_lines(seeds, state_->trace);
  const std::uint64_t per_seed = state_->trace.direction == Direction::both ? 2 : 1;
  for (std::uint64_t k = 0; k < lines.size(); ++k) state_->held.push_back({first_seed * per_seed + k, lines[k], 0, 0});
}

void HandOffTrace::add(std::span<const HandedLine> lines) { state_->held.insert(state_->held.end(), lines.begin(), lines.end()); }

std::uint64_t HandOffTrace::held() const { return state_->held.size(); }

std::vector<HandedLine> HandOffTrace::run() {
  State& st = *state_;
  std::vector<HandedLine> leaving;
  if (st.held.empty()) return leaving;
  std::vector<HalfLine> lines;
  for (const HandedLine& h : st.held) lines.push_back(h.line);
  st.runner->restart(lines);
  ++st.round.round;
  st.round.first_line = 0, st.round.window = lines.size();
  const auto advance_start = Clock::now();
  (void)st.runner->run(st.round);
  st.stats.advance_seconds += seconds_since(advance_start);
  ++st.stats.rounds;
  std::vector<HalfLine> after;
  std::vector<TracedPoint> points;
  st.runner->collect(after, points);
  const std::vector<std::uint64_t> waits = st.runner->waits_for();
  for (std::size_t i = 0; i < after.size(); ++i) {
    HandedLine h = st.held[i];
    const std::uint32_t before = h.line.steps;
    if (after[i].steps > before) {
      st.segments.push_back({h.id, before, after[i].steps - before});
      const TracedPoint* first = points.data() + i * st.trace.max_steps;
      st.points.insert(st.points.end(), first + before, first + after[i].steps);
    }
    h.idle_hops = after[i].steps > before ? 0 : h.idle_hops + 1;
    h.line = after[i];
    if (h.line.ended) {
      st.ended.push_back(h);
      continue;
    }
    HEADRACE_EXPECT(waits[i] < st.table.offset.size() && st.round.slot_of_unit[waits[i]] < 0, Error,
                    st.path + ": half-line " + std::to_string(h.id) + " stopped neither ended nor waiting for a block held elsewhere");
    HEADRACE_EXPECT(h.idle_hops <= 2 * st.ranks, UsageError,
                    st.path + ": half-line " + std::to_string(h.id) + " was handed between ranks " + std::to_string(h.idle_hops) +
                        " times without a step: a step reaches beyond the blocks next to a rank's; trace with shorter steps, "
                        "larger blocks, or every rank reading any block");
    h.waits_for = waits[i];
    leaving.push_back(h);
  }
  st.held.clear();
  return leaving;
}

const std::vector<TracedSegment>& HandOffTrace::segments() const { return state_->segments; }
const std::vector<TracedPoint>& HandOffTrace::points() const { return state_->points; }
const std::vector<HandedLine>& HandOffTrace::ended() const { return state_->ended; }
const ResidentStats& HandOffTrace::stats() const { return state_->stats; }

Polylines assemble_handed(const std::vector<Vec3>& seeds, const TraceOptions& options, std::span<const HandedLine> ended,
                          std::span<const TracedSegment> segments, std::span<const TracedPoint> points) {
  const std::uint64_t count = seeds.size() * (options.direction == Direction::both ? 2 : 1);
  std::vector<HalfLine> lines(count);
  std::vector<std::uint8_t> seen(count, 0);
  for (const HandedLine& h : ended) {
    HEADRACE_EXPECT(h.id < count && !seen[h.id], UsageError, "half-line " + std::to_string(h.id) + " ended twice, or is not of this trace");
    seen[h.id] = 1, lines[h.id] = h.line;
  }
  for (std::uint64_t id = 0; id < count; ++id)
    HEADRACE_EXPECT(seen[id], UsageError, "half-line " + std::to_string(id) + " did not end on any rank");
  std::vector<TracedPoint> all(count * options.max_steps);
  std::vector<std::uint64_t> filled(count, 0);
  std::uint64_t at = 0;
  for (const TracedSegment& s : segments) {
    HEADRACE_EXPECT(s.id < count && std::uint64_t{s.first_step} + s.count <= options.max_steps && at + s.count <= points.size(),
                    UsageError, "a segment of half-line " + std::to_string(s.id) + " lies outside the trace");
    std::copy(points.begin() + static_cast<std::ptrdiff_t>(at), points.begin() + static_cast<std::ptrdiff_t>(at + s.count),
              all.begin() + static_cast<std::ptrdiff_t>(s.id * options.max_steps + s.first_step));
    filled[s.id] += s.count, at += s.count;
  }
  for (std::uint64_t id = 0; id < count; ++id)
    HEADRACE_EXPECT(filled[id] == lines[id].steps, UsageError,
                    "half-line " + std::to_string(id) + " took " + std::to_string(lines[id].steps) + " steps, its segments hold " +
                        std::to_string(filled[id]) + " points");
  return assemble(seeds, options, lines, all);
}

}  // namespace headrace::workloads::streamlines
