#include "headrace/workloads/streamlines/resident_tracer.hpp"

#include <algorithm>
#include <future>
#include <memory>
#include <optional>

#include "headrace/detail/seconds.hpp"
#include "headrace/error.hpp"
#include "headrace/workloads/streamlines/blocked_field.hpp"
#include "headrace/workloads/streamlines/hilbert_field.hpp"
#include "half_lines.hpp"
#include "round_loop.hpp"

namespace headrace::workloads::streamlines {
namespace {

using Clock = headrace::detail::SteadyClock;
using headrace::detail::seconds_since;
using namespace resident;

// What a trace's rounds and the sampling after them work with, on the heap: the sampling may outlive
// trace_rounds on a thread of its own. Members in the order they are made (the loads, which wait for
// their reads into the runner's pool, go before it).
template <typename Units>
struct Rounds {
  std::string path;
  UnitTable table;
  std::unique_ptr<RoundRunner<Units>> runner;
  std::optional<UnitLoads> loads;
  RoundState state;
  std::optional<SlotTable> slot_table;
};

template <typename Units>
SampledVelocities sample_lines(Rounds<Units>& rounds, std::uint64_t count) {
  const auto start = Clock::now();
  SampledVelocities sampled;
  sampled.values = sample_in_rounds(*rounds.runner, *rounds.loads, *rounds.slot_table, rounds.state, rounds.table, count);
  sampled.seconds = seconds_since(start);
  return sampled;
}

template <typename Units>
ContainerTraceRun trace_rounds(const FlowField& flow, const Units& units, UnitTable table,
                               const std::vector<Vec3>& seeds, const ContainerTraceOptions& options) {
  const TraceOptions& trace = options.trace;
  HEADRACE_EXPECT(trace.step_size > 0 && trace.max_steps > 0, UsageError, "streamlines need a positive step size and step count");
  const std::uint64_t unit_count = table.offset.size();
  const std::uint64_t slots = std::min<std::uint64_t>(options.cache_bytes / table.unit_bytes, unit_count);
  HEADRACE_EXPECT(slots >= std::min<std::uint64_t>(8, unit_count), UsageError,
                  "the resident cache needs room for 8 units of " + std::to_string(table.unit_bytes) + " bytes, got " +
                      std::to_string(options.cache_bytes) + " bytes");

  // From the tracer's making (its buffers, kernels and reads) to the lines on the host, as HandOffTrace's
  // job is timed: the two are compared.
  const auto start = Clock::now();
  std::vector<HalfLine> lines = start_lines(seeds, trace);
  const std::uint64_t line_count = lines.size();
  auto rounds = std::make_unique<Rounds<Units>>();
  Rounds<Units>& r = *rounds;
  r.path = flow.container.path();
  r.table = std::move(table);
  r.runner = make_round_runner(options.device, units, trace, r.table.unit_bytes, slots, unit_count, std::move(lines), options.threads);
  r.loads.emplace(r.path, r.table, *r.runner, tracer_queue_options(options.backend, options.device), slots);

  ContainerTraceRun run;
  run.resident.make_seconds = seconds_since(start);
  run.layout = flow.layout;
  run.unit_bytes = r.table.unit_bytes;
  ResidentStats& stats = run.resident;
  stats.slots = slots;
  r.state = RoundState{0, 0, line_count, std::vector<std::int32_t>(unit_count, -1), std::vector<std::uint32_t>(unit_count, 0),
                       std::vector<std::uint32_t>(unit_count, 0)};
  r.slot_table.emplace(slots, r.state);
  auto told_at = Clock::now();
  const auto keep_going = [&](std::uint64_t ended) {
    if (!options.progress || seconds_since(told_at) < 0.1) return true;
    told_at = Clock::now();
    // Told in lines (seeds): a line of both directions is two half-lines here.
    return options.progress(ended * seeds.size() / std::max<std::uint64_t>(line_count, 1), seeds.size());
  };
  const bool stopped = !run_rounds([&](RoundState& s) { return r.runner->run(s); }, *r.runner, *r.loads, *r.slot_table, r.state, r.table, line_count,
                                   [](std::uint64_t) { return true; }, keep_going, stats, r.path);
  const auto collect_start = Clock::now();
  run.lines = r.runner->polylines(seeds, trace, stopped);
  stats.collect_seconds = seconds_since(collect_start);
  run.seconds = seconds_since(start);
  if (options.sample_velocities) {
    const std::uint64_t count = run.lines.points.size();
    if (r.runner->start_sampling_lines()) {
      // The rest on a thread that owns the tracer (and lets it go there), while the caller writes the lines.
      run.velocities = std::async(std::launch::async, [rounds = std::move(rounds), count]() mutable {
        SampledVelocities sampled = sample_lines(*rounds, count);
        rounds.reset();
        return sampled;
      });
    } else {  // sampled at the host's copy of the points, which the caller holds only after this returns
      r.runner->start_sampling(run.lines.points);
      std::promise<SampledVelocities> sampled;
      sampled.set_value(sample_lines(r, count));
      run.velocities = sampled.get_future();
    }
  }
  return run;
}

}  // namespace

ContainerTraceRun trace_resident(const FlowField& flow, const std::vector<Vec3>& seeds,
                                 const ContainerTraceOptions& options) {
  if (flow.layout == "blocks") {
    const BlockLayout layout = block_layout_of(flow.container);
    return trace_rounds(flow, layout, unit_table(flow, layout, flow.frame), seeds, options);
  }
  const HilbertLayout layout = hilbert_layout_of(flow.container);
  const std::uint64_t unit_bytes = std::uint64_t{options.unit_pages} * page_bytes;
  check_unit_bytes(unit_bytes);
  const HilbertUnits units{layout, unit_bytes / point_bytes};
  return trace_rounds(flow, units, unit_table(flow, units, flow.frame), seeds, options);
}

}  // namespace headrace::workloads::streamlines
