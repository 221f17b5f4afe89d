// The GPU tracer (issue 5): the units a round of half-lines asks for are read by the engine's queue
// into a cache resident in GPU memory, and every half-line steps on its own GPU thread
// (resident_lines.hpp) until it ends or needs an absent unit; between rounds the host loads the units
// most asked for, evicting those the last round did not read. On the host (device -1) the same rounds
// run on CPU threads over host memory: the reference the GPU's lines are compared with.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "headrace/workloads/streamlines/flow_field.hpp"
#include "headrace/workloads/streamlines/line_stepper.hpp"
#include "headrace/workloads/streamlines/trace_container.hpp"

namespace headrace::workloads::streamlines {

// Throws UsageError for a cache of fewer than 8 units, UnavailableError without a GPU or without the
// kernels (a build without nvcc), the queue's error for a unit that could not be read, and UsageError
// when rounds stop making progress (a cache too small for the steps of one round).
[[nodiscard]] ContainerTraceRun trace_resident(const FlowField& flow, const std::vector<Vec3>& seeds,
                                               const ContainerTraceOptions& options);

// A trace shared by the ranks of a job by space (headrace.distributed, issue 21): each rank holds the
// native blocks of its run of block planes along z, and the blocks next to them (so that a cell on its
// border is sampled whole): resident for the whole trace when they fit its cache, else loaded as its
// lines wait for them (the GPU tracer's rounds, above, over those blocks only). Its half-lines step until
// each ends or waits for a block another rank holds; it then leaves for the rank that holds that block,
// which steps it on from the same state: the points are those one tracer traces.

// A half-line on the move: its number in the whole trace (seed i's backward and forward half-lines are
// 2i and 2i + 1 when tracing both ways, i otherwise), where it stands, the block it waits for, and the
// hand-offs since its last step (a line passed on without stepping needs blocks no rank holds together).
struct HandedLine {
  std::uint64_t id = 0;
  HalfLine line;
  std::uint64_t waits_for = 0;
  std::uint32_t idle_hops = 0;
};

// Points [first_step, first_step + count) of half-line `id`, traced by one rank.
struct TracedSegment {
  std::uint64_t id = 0;
  std::uint32_t first_step = 0, count = 0;
};

class HandOffTrace {
 public:
  // Rank `rank` of `ranks`, its cache of options.cache_bytes in options.device's memory (the host's for
  // -1): its blocks and their neighbours read now when they fit. UsageError for the Hilbert layout (its
  // units have no neighbours to hold), for more ranks than planes of blocks, or for a cache of fewer than
  // 8 blocks.
  HandOffTrace(const FlowField& flow, std::uint32_t rank, std::uint32_t ranks, const ContainerTraceOptions& options);
  ~HandOffTrace();
  HandOffTrace(const HandOffTrace&) = delete;
  HandOffTrace& operator=(const HandOffTrace&) = delete;

  // The rank that holds block `unit`, and the blocks this rank's cache holds.
  [[nodiscard]] std::uint32_t owner_of(std::uint64_t unit) const;
  [[nodiscard]] std::uint64_t resident_blocks() const;
  // Which way its lines run (so which half-lines belong to which seed).
  [[nodiscard]] Direction direction() const;
  // The half-lines of seeds first_seed, first_seed + 1, ... of the whole trace start here.
  void start(const std::vector<Vec3>& seeds, std::uint64_t first_seed);
  // Half-lines handed here by other ranks.
  void add(std::span<const HandedLine> lines);
  [[nodiscard]] std::uint64_t held() const;
  // Rounds over the half-lines held until each ends or waits for a block held elsewhere, loading this
  // rank's blocks they wait for between rounds. Returns those that wait (to hand to
  // owner_of(waits_for)); none is held here after it. UsageError for a line handed on 2 x ranks times
  // without a step, or a cache that cannot hold the blocks of one step.
  [[nodiscard]] std::vector<HandedLine> run();

  // What this rank traced: runs of points (in order) and the half-lines that ended here.
  [[nodiscard]] const std::vector<TracedSegment>& segments() const;
  [[nodiscard]] const std::vector<TracedPoint>& points() const;
  [[nodiscard]] const std::vector<HandedLine>& ended() const;
  [[nodiscard]] const ResidentStats& stats() const;
  // The same, moved out (the rank's points run to hundreds of MB: no copy); this rank holds none after.
  struct Traced {
    std::vector<TracedSegment> segments;
    std::vector<TracedPoint> points;
    std::vector<HandedLine> ended;
  };
  [[nodiscard]] Traced take_traced();
  // A job of one rank: the lines of `seeds` (those started here from seed 0), put together from what it
  // traced, which it keeps (forget_lines then clears it, the memory kept for the next trace: a held
  // tracer's second trace writes its points where the first's lay). UsageError for a job of several.
  [[nodiscard]] Polylines own_lines(const std::vector<Vec3>& seeds) const;
  // Forgets the lines traced and the counters, keeping the cache with the blocks it holds: the next
  // trace of the same field (other seeds) starts with them resident, as a notebook's second call would.
  void forget_lines();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// What one rank traced, parted by the rank that owns each half-line's seed: part r holds what belongs to
// seeds [seed_bounds[r], seed_bounds[r + 1]), each segment's points in the order they came. So every rank
// puts together the lines of its own seeds, and none joins them all (each part keeps the rows' order).
// UsageError for a half-line whose seed lies beyond the last bound.
[[nodiscard]] std::vector<HandOffTrace::Traced> part_by_seed_owner(const HandOffTrace::Traced& traced,
                                                                   std::span<const std::uint64_t> seed_bounds,
                                                                   Direction direction);

// The lines of seeds first_seed, first_seed + 1, ... (`seeds`) from the segments, points and ended
// half-lines of those seeds that every rank traced: those of one tracer over `seeds`. UsageError when a
// half-line did not end exactly once, belongs to another seed, or its points have gaps.
[[nodiscard]] Polylines assemble_handed(const std::vector<Vec3>& seeds, const TraceOptions& options,
                                        std::span<const HandedLine> ended, std::span<const TracedSegment> segments,
                                        std::span<const TracedPoint> points, std::uint64_t first_seed = 0);

}  // namespace headrace::workloads::streamlines
