// A trace handed between the ranks of a job (resident_tracer.hpp's HandOffTrace): each rank's blocks in its
// cache, its half-lines stepped in the GPU tracer's rounds, and the lines of every rank's share put together.
#include <algorithm>
#include <memory>
#include <numeric>
#include <utility>

#include "headrace/detail/parallel_for.hpp"
#include "headrace/error.hpp"
#include "headrace/workloads/streamlines/blocked_field.hpp"
#include "headrace/workloads/streamlines/resident_tracer.hpp"
#include "half_lines.hpp"
#include "round_loop.hpp"

namespace headrace::workloads::streamlines {
namespace {

using namespace resident;

}  // namespace

struct HandOffTrace::State {
  std::string path;
  TraceOptions trace;
  BlockLayout layout;
  UnitTable table;
  std::uint32_t rank = 0, ranks = 1;
  std::uint64_t planes = 1, per_plane = 1;  // planes of blocks along z, blocks in one
  std::uint64_t first_unit = 0, end_unit = 0;  // the blocks this rank may hold: its planes and the plane either side
  std::unique_ptr<RoundRunner<BlockLayout>> runner;
  RoundState round;
  std::unique_ptr<SlotTable> slot_table;
  std::unique_ptr<UnitLoads> loads;  // after the runner, so destroyed before it: its reads go into the pool
  std::vector<HandedLine> held;
  std::vector<TracedSegment> segments;
  std::vector<TracedPoint> points;
  std::vector<HandedLine> ended;
  ResidentStats stats;

  [[nodiscard]] bool holds(std::uint64_t unit) const { return unit >= first_unit && unit < end_unit; }
};

HandOffTrace::HandOffTrace(const FlowField& flow, std::uint32_t rank, std::uint32_t ranks, const ContainerTraceOptions& options)
    : state_(std::make_unique<State>()) {
  State& st = *state_;
  st.path = flow.container.path();
  HEADRACE_EXPECT(flow.layout == "blocks", UsageError,
                  st.path + ": handing lines between ranks needs native blocks (a Hilbert unit has no neighbours to hold); "
                            "convert it to layout blocks, or let every rank read any unit");
  st.trace = options.trace;
  HEADRACE_EXPECT(st.trace.step_size > 0 && st.trace.max_steps > 0, UsageError, "streamlines need a positive step size and step count");
  st.layout = block_layout_of(flow.container);
  st.table = unit_table(flow, st.layout, flow.frame);
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
  st.first_unit = (std::max<std::uint64_t>(first_plane(rank), 1) - 1) * st.per_plane;
  st.end_unit = std::min<std::uint64_t>(first_plane(rank + 1) + 1, st.planes) * st.per_plane;
  // Resident for the whole trace when they fit the cache; otherwise the cache holds those its lines wait
  // for, round by round, as one tracer's does over the whole field.
  const std::uint64_t region = st.end_unit - st.first_unit;
  const std::uint64_t slots = std::min(options.cache_bytes / st.table.unit_bytes, region);
  HEADRACE_EXPECT(slots >= std::min<std::uint64_t>(8, region), UsageError,
                  st.path + ": rank " + std::to_string(rank) + "'s cache needs room for 8 blocks of " +
                      std::to_string(st.table.unit_bytes) + " bytes, got " + std::to_string(options.cache_bytes) + " bytes");
  st.stats.slots = slots;
  st.runner = make_round_runner(options.device, st.layout, st.trace, st.table.unit_bytes, slots, units, std::vector<HalfLine>{},
                                options.threads);
  st.slot_table = std::make_unique<SlotTable>(slots, st.round);
  st.loads = std::make_unique<UnitLoads>(st.path, st.table, *st.runner, tracer_queue_options(options.backend, options.device), slots);
  if (slots == region) {
    std::vector<std::uint64_t> all(region);
    std::iota(all.begin(), all.end(), st.first_unit);
    (void)load_units(*st.runner, *st.loads, *st.slot_table, st.table, all, st.stats);
  }
}

HandOffTrace::~HandOffTrace() = default;

std::uint32_t HandOffTrace::owner_of(std::uint64_t unit) const {
  const State& st = *state_;
  return static_cast<std::uint32_t>(unit / st.per_plane * st.ranks / st.planes);  // runs of whole planes
}

std::uint64_t HandOffTrace::resident_blocks() const { return state_->stats.slots; }
Direction HandOffTrace::direction() const { return state_->trace.direction; }

void HandOffTrace::start(const std::vector<Vec3>& seeds, std::uint64_t first_seed) {
  const std::vector<HalfLine> lines = start_lines(seeds, state_->trace);
  const std::uint64_t per_seed = half_lines_per_seed(state_->trace.direction);
  for (std::uint64_t k = 0; k < lines.size(); ++k) state_->held.push_back({first_seed * per_seed + k, lines[k], 0, 0});
}

void HandOffTrace::add(std::span<const HandedLine> lines) { state_->held.insert(state_->held.end(), lines.begin(), lines.end()); }

std::uint64_t HandOffTrace::held() const { return state_->held.size(); }

std::vector<HandedLine> HandOffTrace::run() {
  State& st = *state_;
  std::vector<HandedLine> leaving;
  if (st.held.empty()) return leaving;
  std::vector<HalfLine> lines;
  std::vector<std::uint32_t> before;  // the steps each line had: only the points after them come back
  for (const HandedLine& h : st.held) lines.push_back(h.line), before.push_back(h.line.steps);
  st.runner->restart(lines);
  st.round.first_line = 0, st.round.window = lines.size();
  (void)run_rounds([&](RoundState& s) { return st.runner->run(s); }, *st.runner, *st.loads, *st.slot_table, st.round, st.table, lines.size(),
                   [&st](std::uint64_t unit) { return st.holds(unit); }, [](std::uint64_t) { return true; }, st.stats, st.path);
  std::vector<HalfLine> after;
  st.runner->collect(before, after, st.points);  // the points of the segments below, in order
  const std::vector<std::uint64_t> waits = st.runner->waits_for();
  for (std::size_t i = 0; i < after.size(); ++i) {
    HandedLine h = st.held[i];
    if (after[i].steps > before[i]) st.segments.push_back({h.id, before[i], after[i].steps - before[i]});
    h.idle_hops = after[i].steps > before[i] ? 0 : h.idle_hops + 1;
    h.line = after[i];
    if (h.line.ended) {
      st.ended.push_back(h);
      continue;
    }
    HEADRACE_EXPECT(waits[i] < st.table.offset.size() && !st.holds(waits[i]), Error,
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

HandOffTrace::Traced HandOffTrace::take_traced() {
  State& st = *state_;
  return {std::exchange(st.segments, {}), std::exchange(st.points, {}), std::exchange(st.ended, {})};
}

Polylines HandOffTrace::own_lines(const std::vector<Vec3>& seeds) const {
  const State& st = *state_;
  HEADRACE_EXPECT(st.ranks == 1, UsageError, "a job of " + std::to_string(st.ranks) + " ranks: rank 0 assembles every rank's lines");
  return assemble_handed(seeds, st.trace, st.ended, st.segments, st.points);
}

void HandOffTrace::forget_lines() {
  State& st = *state_;
  HEADRACE_EXPECT(st.held.empty(), UsageError, "lines are still held: run them to their ends (or hand them on) first");
  st.segments.clear(), st.points.clear(), st.ended.clear();
  st.stats = ResidentStats{.slots = st.stats.slots};
}

std::vector<HandOffTrace::Traced> part_by_seed_owner(const HandOffTrace::Traced& traced, std::span<const std::uint64_t> seed_bounds,
                                                     Direction direction) {
  HEADRACE_EXPECT(seed_bounds.size() >= 2, UsageError, "seed bounds of at least one rank are needed");
  const std::uint64_t per_seed = half_lines_per_seed(direction);
  const auto owner = [&](std::uint64_t id) {
    const std::uint64_t seed = id / per_seed;
    HEADRACE_EXPECT(seed < seed_bounds.back(), UsageError,
                    "half-line " + std::to_string(id) + " belongs to seed " + std::to_string(seed) + ", past the trace's " +
                        std::to_string(seed_bounds.back()) + " seeds");
    return static_cast<std::size_t>(std::upper_bound(seed_bounds.begin(), seed_bounds.end(), seed) - seed_bounds.begin() - 1);
  };
  std::vector<HandOffTrace::Traced> parts(seed_bounds.size() - 1);
  for (const HandedLine& h : traced.ended) parts[owner(h.id)].ended.push_back(h);
  std::vector<std::size_t> to(traced.segments.size());
  std::vector<std::uint64_t> point_counts(parts.size(), 0);
  for (std::size_t i = 0; i < traced.segments.size(); ++i) {
    to[i] = owner(traced.segments[i].id);
    parts[to[i]].segments.push_back(traced.segments[i]);
    point_counts[to[i]] += traced.segments[i].count;
  }
  for (std::size_t r = 0; r < parts.size(); ++r) parts[r].points.reserve(point_counts[r]);
  std::uint64_t taken = 0;
  for (std::size_t i = 0; i < traced.segments.size(); ++i) {
    const std::uint32_t count = traced.segments[i].count;
    HEADRACE_EXPECT(taken + count <= traced.points.size(), UsageError, "segments hold more points than were traced");
    parts[to[i]].points.insert(parts[to[i]].points.end(), traced.points.begin() + static_cast<std::ptrdiff_t>(taken),
                               traced.points.begin() + static_cast<std::ptrdiff_t>(taken + count));
    taken += count;
  }
  return parts;
}

Polylines assemble_handed(const std::vector<Vec3>& seeds, const TraceOptions& options, std::span<const HandedLine> ended,
                          std::span<const TracedSegment> segments, std::span<const TracedPoint> points, std::uint64_t first_seed) {
  const std::uint64_t per_seed = half_lines_per_seed(options.direction);
  const std::uint64_t count = seeds.size() * per_seed;
  const std::uint64_t first_id = first_seed * per_seed;  // ids below are relative to it
  const auto relative = [&](std::uint64_t id, const char* what) {
    HEADRACE_EXPECT(id >= first_id && id - first_id < count, UsageError,
                    std::string(what) + " of half-line " + std::to_string(id) + ", not of seeds " + std::to_string(first_seed) +
                        " to " + std::to_string(first_seed + seeds.size() - 1));
    return id - first_id;
  };
  std::vector<HalfLine> lines(count);
  std::vector<std::uint8_t> seen(count, 0);
  for (const HandedLine& h : ended) {
    const std::uint64_t id = relative(h.id, "the end");
    HEADRACE_EXPECT(!seen[id], UsageError, "half-line " + std::to_string(h.id) + " ended twice");
    seen[id] = 1, lines[id] = h.line;
  }
  for (std::uint64_t id = 0; id < count; ++id)
    HEADRACE_EXPECT(seen[id], UsageError, "half-line " + std::to_string(first_id + id) + " did not end on any rank");
  // assemble's layout (per seed: its backward half reversed, the seed, its forward half), each segment's
  // points written straight to their places: one pass over the points, as they came from the ranks.
  const bool backward = options.direction != Direction::forward;
  Polylines out;
  out.lines.resize(seeds.size());
  out.offsets.resize(seeds.size() + 1);
  std::vector<std::int64_t> seed_at(seeds.size());  // where each seed lies in out.points
  for (std::uint64_t s = 0; s < seeds.size(); ++s) {
    const std::uint64_t first = s * per_seed;
    seed_at[s] = out.offsets[s] + (backward ? lines[first].steps : 0);
    std::uint64_t total = 1;
    for (std::uint64_t k = 0; k < per_seed; ++k) total += lines[first + k].steps;
    out.offsets[s + 1] = out.offsets[s] + static_cast<std::int64_t>(total);
    if (backward) out.lines[s].backward_end = lines[first].end;
    if (options.direction != Direction::backward) out.lines[s].forward_end = lines[first + per_seed - 1].end;
  }
  out.points.resize(static_cast<std::size_t>(out.offsets.back()));
  out.times.resize(out.points.size());
  for (std::uint64_t s = 0; s < seeds.size(); ++s) {
    const auto at = static_cast<std::size_t>(seed_at[s]);
    out.points[at] = seeds[s], out.times[at] = 0.0f;
  }
  // A half-line's step k (0: the first after the seed) lies k + 1 after its seed, or before it backward.
  // Checked and placed in one serial pass over the segments (where each one's points start), then copied
  // on every core: tens of millions of points from four ranks are otherwise a serial copy on rank 0.
  std::vector<std::uint64_t> filled(count, 0), starts(segments.size());
  std::uint64_t taken = 0;
  std::vector<std::uint64_t> ids(segments.size());  // relative
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const TracedSegment& seg = segments[i];
    const std::uint64_t id = ids[i] = relative(seg.id, "a segment");
    HEADRACE_EXPECT(std::uint64_t{seg.first_step} + seg.count <= lines[id].steps && taken + seg.count <= points.size(),
                    UsageError, "a segment of half-line " + std::to_string(seg.id) + " lies outside the trace");
    starts[i] = taken;
    filled[id] += seg.count, taken += seg.count;
  }
  for (std::uint64_t id = 0; id < count; ++id)
    HEADRACE_EXPECT(filled[id] == lines[id].steps, UsageError,
                    "half-line " + std::to_string(first_id + id) + " took " + std::to_string(lines[id].steps) + " steps, its segments hold " +
                        std::to_string(filled[id]) + " points");
  constexpr std::uint64_t segments_a_task = 1024;
  headrace::detail::parallel_for((segments.size() + segments_a_task - 1) / segments_a_task, 0, [&](std::uint64_t task) {
    const std::uint64_t end = std::min<std::uint64_t>(segments.size(), (task + 1) * segments_a_task);
    for (std::uint64_t i = task * segments_a_task; i < end; ++i) {
      const TracedSegment& seg = segments[i];
      const bool reversed = backward && ids[i] % per_seed == 0;
      const TracedPoint* from = points.data() + starts[i];
      const std::int64_t seed = seed_at[ids[i] / per_seed];
      for (std::uint32_t k = 0; k < seg.count; ++k) {
        const std::int64_t step = seg.first_step + k + 1;
        const auto at = static_cast<std::size_t>(reversed ? seed - step : seed + step);
        out.points[at] = from[k].p, out.times[at] = from[k].time;
      }
    }
  });
  return out;
}

}  // namespace headrace::workloads::streamlines
