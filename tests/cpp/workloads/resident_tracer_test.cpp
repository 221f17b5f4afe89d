// The GPU tracer's rounds (resident_tracer.hpp), run by the host executor on the CPU: with a cache of a
// few units, through every backend of the queue, both layouts and both integrators, the lines are the
// in-core ones bit for bit; a unit that cannot be read stops the trace. On a GPU the kernel's lines
// match the host executor's.
#include "headrace/workloads/streamlines/resident_tracer.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include <gtest/gtest.h>

#include "headrace/error.hpp"
#include "headrace/gpu/cuda_driver.hpp"
#include "headrace/io/backend.hpp"
#include "headrace/workloads/streamlines/hilbert_field.hpp"
#include "headrace/workloads/streamlines/in_memory_field.hpp"
#include "headrace/workloads/streamlines/trace_container.hpp"
#include "workloads/flow_fixture.hpp"
#include "workloads/same_lines.hpp"

namespace headrace::workloads::streamlines {
namespace {

std::vector<Vec3> swirl_seeds(int count) {
  std::vector<Vec3> seeds;
  for (int s = 0; s < count; ++s) seeds.push_back({0.5f + 0.11f * s, 0.4f + 0.07f * s, 0.1f + 0.05f * s});
  return seeds;
}

ContainerTraceOptions resident_options() {
  ContainerTraceOptions options;
  options.manager = DataManager::resident;
  options.trace.step_size = 0.02f;
  options.trace.max_steps = 300;
  options.trace.direction = Direction::both;
  options.threads = 8;
  options.unit_pages = 3;
  return options;
}

class ResidentRounds : public ::testing::TestWithParam<io::BackendKind> {};

TEST_P(ResidentRounds, TraceTheInCoreStreamlinesWithAFewUnits) {
  testing::BlockedFlow flow(32, 24, 16);
  if (auto why = io::unavailable_reason(GetParam(), flow.path)) GTEST_SKIP() << *why;
  const std::string hilbert = flow.dir.file("hilbert.hrc");
  (void)convert_blocks_to_hilbert(flow.path, hilbert, 2, 3);
  const std::vector<Vec3> seeds = swirl_seeds(40);
  ContainerTraceOptions options = resident_options();
  options.backend = GetParam();
  const InMemoryField in_core{flow.layout.grid, flow.linear.data()};
  for (Integrator integrator : {Integrator::rk4, Integrator::rk45}) {
    options.trace.integrator = integrator;
    const auto reference = trace_all(in_core, seeds, options.trace, 1);
    // 16 of 192 blocks of 4^3 points (a step near a block's corner needs up to 8), or 8 of 12 Hilbert units
    for (const auto& [path, unit_bytes, slots] : {std::tuple{flow.path, std::uint64_t{768}, 16u},
                                                  std::tuple{hilbert, 3 * page_bytes, 8u}}) {
      options.cache_bytes = slots * unit_bytes;
      const auto run = trace_container(path, seeds, options);
      ASSERT_TRUE(testing::same_lines(reference, run.lines)) << run.layout << " " << static_cast<int>(integrator);
      EXPECT_EQ(run.unit_bytes, unit_bytes);
      EXPECT_EQ(run.resident.slots, slots);
      EXPECT_GT(run.resident.rounds, 2u) << "lines wandered through more units than the cache holds";
      EXPECT_GT(run.resident.evictions, 0u);
      EXPECT_EQ(run.resident.evictions, run.resident.units_loaded - slots);
      if (run.layout == "blocks") EXPECT_EQ(run.resident.bytes_read, run.resident.units_loaded * unit_bytes);
      EXPECT_GT(run.seconds, 0.0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ResidentRounds,
                         ::testing::Values(io::BackendKind::posix, io::BackendKind::direct, io::BackendKind::uring),
                         [](const auto& info) { return std::string(io::to_string(info.param)); });

TEST(ResidentTracer, ABigCacheLoadsEachUnitOnce) {
  testing::BlockedFlow flow(32, 24, 16);
  ContainerTraceOptions options = resident_options();
  options.backend = io::BackendKind::posix;
  options.cache_bytes = 1 << 20;
  const auto run = trace_container(flow.path, swirl_seeds(40), options);
  EXPECT_EQ(run.resident.slots, 192u);  // no more slots than units
  EXPECT_EQ(run.resident.evictions, 0u);
  EXPECT_LE(run.resident.units_loaded, 192u);
  const InMemoryField in_core{flow.layout.grid, flow.linear.data()};
  EXPECT_TRUE(testing::same_lines(trace_all(in_core, swirl_seeds(40), options.trace, 1), run.lines));
}

// Velocities sampled through the cache, holding the whole field or 8 units, are sample_flow's (the
// file's mapping) bit for bit, NaN outside the grid.
bool same_bits(const std::vector<Vec3>& a, const std::vector<Vec3>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Vec3)) == 0;
}

TEST(ResidentTracer, SamplesTheLinesVelocitiesAsTheFileGivesThem) {
  testing::BlockedFlow flow(32, 24, 16);
  const std::string hilbert = flow.dir.file("hilbert.hrc");
  (void)convert_blocks_to_hilbert(flow.path, hilbert, 2, 3);
  ContainerTraceOptions options = resident_options();
  options.sample_velocities = true;
  for (const std::string& path : {flow.path, hilbert}) {
    options.cache_bytes = 1 << 20;  // every unit
    auto run = trace_container(path, swirl_seeds(40), options);
    const std::vector<Vec3> velocities = run.velocities.get().values;
    ASSERT_EQ(velocities.size(), run.lines.points.size()) << path;
    std::vector<Vec3> mapped(run.lines.points.size());
    sample_flow(path, run.lines.points, mapped, 0, 2);
    EXPECT_TRUE(same_bits(velocities, mapped)) << path;
    std::vector<Vec3> outside{{-5.0f, 0.5f, 0.5f}}, sampled(1);
    sample_flow(path, outside, sampled, 0, 1);
    EXPECT_TRUE(std::isnan(sampled[0].x));
    options.cache_bytes = run.unit_bytes * 8;  // out of core: rounds load the units as the points want them
    auto small = trace_container(path, swirl_seeds(40), options);
    const std::vector<Vec3> small_velocities = small.velocities.get().values;
    std::vector<Vec3> small_mapped(small.lines.points.size());
    sample_flow(path, small.lines.points, small_mapped, 0, 2);
    EXPECT_TRUE(same_bits(small_velocities, small_mapped)) << path << " " << small_velocities.size() << " of " << small_mapped.size();
  }
}

TEST(ResidentTracer, RefusesACacheOfFewerThanEightUnits) {
  testing::BlockedFlow flow(32, 24, 16);
  ContainerTraceOptions options = resident_options();
  options.cache_bytes = 7 * 768;
  EXPECT_THROW((void)trace_container(flow.path, swirl_seeds(4), options), UsageError);
}

// Eight 4^3 blocks cannot hold the corners of the seven stages of an RK45 step that crosses block
// corners: the window of lines shrinks to one, which still waits, and the trace says so, not spinning.
TEST(ResidentTracer, ACacheTooSmallForOneStepSaysSo) {
  testing::BlockedFlow flow(32, 24, 16);
  ContainerTraceOptions options = resident_options();
  options.trace.integrator = Integrator::rk45;
  options.backend = io::BackendKind::posix;
  options.cache_bytes = 8 * 768;
  try {
    (void)trace_container(flow.path, swirl_seeds(40), options);
    FAIL() << "the trace finished";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot hold the units of one step of one line"), std::string::npos) << e.what();
  }
}

TEST(ResidentTracer, AUnitThatCannotBeReadStopsTheTrace) {
  testing::BlockedFlow flow(32, 24, 16);
  const FlowField opened = open_flow(flow.path, 0);
  // The index is in memory; the blocks of the upper half of the grid are gone from the file.
  const auto chunks = opened.container.chunks_of(0, 0);
  ASSERT_EQ(::truncate(flow.path.c_str(), static_cast<off_t>(chunks[chunks.size() / 2].offset)), 0);
  ContainerTraceOptions options = resident_options();
  options.backend = io::BackendKind::posix;
  options.cache_bytes = 1 << 20;
  std::vector<Vec3> seeds = swirl_seeds(40);
  try {
    (void)trace_resident(opened, seeds, options);
    FAIL() << "a trace through a missing block finished";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("flow.hrc: offset "), std::string::npos) << e.what();
  }
}

TEST(ResidentTracer, TheCpuManagersRefuseADevice) {
  testing::BlockedFlow flow;
  ContainerTraceOptions options;
  options.device = 0;
  EXPECT_THROW((void)trace_container(flow.path, swirl_seeds(1), options), UsageError);
}

// The ranks of a job in one process: each traces its block of the seeds, lines leave for the rank that
// holds the block they wait for, until none is held anywhere. What each rank traced, in rank order.
std::vector<HandOffTrace::Traced> run_handed(const std::string& path, const std::vector<Vec3>& seeds, const ContainerTraceOptions& options,
                                             std::uint32_t ranks, std::uint64_t& handed) {
  const FlowField flow = open_flow(path, 0);
  std::vector<std::unique_ptr<HandOffTrace>> rank;
  for (std::uint32_t r = 0; r < ranks; ++r) {
    rank.push_back(std::make_unique<HandOffTrace>(flow, r, ranks, options));
    const std::size_t first = seeds.size() * r / ranks, last = seeds.size() * (r + 1) / ranks;
    rank.back()->start(std::vector<Vec3>(seeds.begin() + static_cast<std::ptrdiff_t>(first), seeds.begin() + static_cast<std::ptrdiff_t>(last)),
                       first);
  }
  handed = 0;
  for (bool any = true; any;) {
    std::vector<std::vector<HandedLine>> inbox(ranks);
    for (auto& r : rank)
      for (const HandedLine& h : r->run()) inbox[r->owner_of(h.waits_for)].push_back(h), ++handed;
    any = false;
    for (std::uint32_t r = 0; r < ranks; ++r) rank[r]->add(inbox[r]), any = any || !inbox[r].empty();
  }
  std::vector<HandOffTrace::Traced> traced;
  for (auto& r : rank) traced.push_back(r->take_traced());
  return traced;
}

// The lines put together on one rank from what every rank traced.
Polylines trace_handed(const std::string& path, const std::vector<Vec3>& seeds, const ContainerTraceOptions& options,
                       std::uint32_t ranks, std::uint64_t& handed) {
  HandOffTrace::Traced all;
  for (HandOffTrace::Traced& part : run_handed(path, seeds, options, ranks, handed)) {
    all.ended.insert(all.ended.end(), part.ended.begin(), part.ended.end());
    all.segments.insert(all.segments.end(), part.segments.begin(), part.segments.end());
    all.points.insert(all.points.end(), part.points.begin(), part.points.end());
  }
  return assemble_handed(seeds, options.trace, all.ended, all.segments, all.points);
}

TEST(HandOffTrace, LinesHandedBetweenRanksAreOneTracersLines) {
  testing::BlockedFlow flow(32, 24, 16);  // 8 x 6 x 4 blocks of 4^3 points
  ContainerTraceOptions options = resident_options();
  options.backend = io::BackendKind::posix;
  options.cache_bytes = 1 << 20;
  const std::vector<Vec3> seeds = swirl_seeds(40);
  const InMemoryField in_core{flow.layout.grid, flow.linear.data()};
  for (Integrator integrator : {Integrator::rk4, Integrator::rk45})
    for (const std::uint32_t ranks : {1u, 2u, 3u, 4u}) {
      options.trace.integrator = integrator;
      std::uint64_t handed = 0;
      const Polylines lines = trace_handed(flow.path, seeds, options, ranks, handed);
      EXPECT_TRUE(testing::same_lines(trace_all(in_core, seeds, options.trace, 1), lines)) << ranks << " ranks";
      if (ranks > 1) EXPECT_GT(handed, 0u) << "the swirl climbs in z: lines cross from rank to rank";
      else EXPECT_EQ(handed, 0u);
    }
}

// Each rank puts together the lines of its own seeds from the parts every rank traced for them (no rank
// joins them all): their lines one after another are one tracer's, whichever way the lines run.
TEST(HandOffTrace, LinesPutTogetherByTheirSeedsOwnersAreOneTracersLines) {
  testing::BlockedFlow flow(32, 24, 16);
  ContainerTraceOptions options = resident_options();
  options.backend = io::BackendKind::posix;
  options.cache_bytes = 1 << 20;
  const std::vector<Vec3> seeds = swirl_seeds(40);
  const InMemoryField in_core{flow.layout.grid, flow.linear.data()};
  for (const Direction direction : {Direction::forward, Direction::backward, Direction::both})
    for (const std::uint32_t ranks : {1u, 3u, 4u}) {
      options.trace.direction = direction;
      std::uint64_t handed = 0;
      const std::vector<HandOffTrace::Traced> traced = run_handed(flow.path, seeds, options, ranks, handed);
      std::vector<std::uint64_t> bounds;
      for (std::uint32_t r = 0; r <= ranks; ++r) bounds.push_back(seeds.size() * r / ranks);
      std::vector<HandOffTrace::Traced> mine(ranks);  // what each rank receives: its part of every rank's
      for (const HandOffTrace::Traced& from : traced) {
        std::vector<HandOffTrace::Traced> parts = part_by_seed_owner(from, bounds, direction);
        ASSERT_EQ(parts.size(), ranks);
        for (std::uint32_t r = 0; r < ranks; ++r) {
          mine[r].ended.insert(mine[r].ended.end(), parts[r].ended.begin(), parts[r].ended.end());
          mine[r].segments.insert(mine[r].segments.end(), parts[r].segments.begin(), parts[r].segments.end());
          mine[r].points.insert(mine[r].points.end(), parts[r].points.begin(), parts[r].points.end());
        }
      }
      Polylines joined;
      for (std::uint32_t r = 0; r < ranks; ++r) {
        const std::vector<Vec3> own(seeds.begin() + static_cast<std::ptrdiff_t>(bounds[r]),
                                    seeds.begin() + static_cast<std::ptrdiff_t>(bounds[r + 1]));
        Polylines lines = assemble_handed(own, options.trace, mine[r].ended, mine[r].segments, mine[r].points, bounds[r]);
        const std::int64_t base = joined.offsets.back();
        joined.points.insert(joined.points.end(), lines.points.begin(), lines.points.end());
        joined.times.insert(joined.times.end(), lines.times.begin(), lines.times.end());
        for (std::size_t k = 1; k < lines.offsets.size(); ++k) joined.offsets.push_back(base + lines.offsets[k]);
        joined.lines.insert(joined.lines.end(), lines.lines.begin(), lines.lines.end());
      }
      EXPECT_TRUE(testing::same_lines(trace_all(in_core, seeds, options.trace, 1), joined)) << ranks << " ranks";
      if (ranks > 1) {
        const std::vector<Vec3> own(seeds.begin(), seeds.begin() + static_cast<std::ptrdiff_t>(bounds[1]));
        EXPECT_THROW((void)assemble_handed(own, options.trace, mine[1].ended, mine[1].segments, mine[1].points, bounds[0]),
                     UsageError);  // another rank's half-lines
      }
    }
  EXPECT_THROW((void)part_by_seed_owner(HandOffTrace::Traced{.ended = {HandedLine{.id = 40}}}, std::vector<std::uint64_t>{0, 40},
                                        Direction::forward),
               UsageError);  // a seed past the last bound
}

// A rank whose blocks do not fit its cache loads them as its lines wait for them: the lines are still
// one tracer's, its reads more than its blocks.
TEST(HandOffTrace, ARankWhoseBlocksOutgrowItsCacheLoadsThemRoundByRound) {
  testing::BlockedFlow flow(32, 24, 16);  // 4 planes of 48 blocks of 768 bytes
  ContainerTraceOptions options = resident_options();
  options.backend = io::BackendKind::posix;
  options.cache_bytes = 40 * 768;  // under a plane
  const std::vector<Vec3> seeds = swirl_seeds(40);
  const InMemoryField in_core{flow.layout.grid, flow.linear.data()};
  for (const std::uint32_t ranks : {1u, 2u, 4u}) {
    std::uint64_t handed = 0;
    const Polylines lines = trace_handed(flow.path, seeds, options, ranks, handed);
    EXPECT_TRUE(testing::same_lines(trace_all(in_core, seeds, options.trace, 1), lines)) << ranks << " ranks";
  }
  const HandOffTrace rank(open_flow(flow.path, 0), 1, 2, options);
  EXPECT_EQ(rank.resident_blocks(), 40u);
  EXPECT_EQ(rank.stats().units_loaded, 0u);  // nothing read before its lines ask
}

// A tracer held across traces (TraceSession): forgetting the lines keeps the cache's blocks, so tracing
// again gives the same lines and reads nothing; a trace with lines still held refuses to forget them.
TEST(HandOffTrace, ForgettingTheLinesKeepsTheBlocksForTheNextTrace) {
  testing::BlockedFlow flow(32, 24, 16);
  ContainerTraceOptions options = resident_options();
  options.backend = io::BackendKind::posix;
  options.cache_bytes = 1 << 20;  // every block
  const std::vector<Vec3> seeds = swirl_seeds(40);
  const InMemoryField in_core{flow.layout.grid, flow.linear.data()};
  HandOffTrace tracer(open_flow(flow.path, 0), 0, 1, options);
  EXPECT_EQ(tracer.stats().bytes_read, 4u * 48 * 768);
  for (int trace = 0; trace < 2; ++trace) {
    tracer.forget_lines();
    EXPECT_EQ(tracer.stats().bytes_read, 0u);
    tracer.start(seeds, 0);
    EXPECT_TRUE(tracer.run().empty());  // one rank holds every block
    EXPECT_EQ(tracer.stats().bytes_read, 0u);
    EXPECT_TRUE(testing::same_lines(trace_all(in_core, seeds, options.trace, 1),
                                    assemble_handed(seeds, options.trace, tracer.ended(), tracer.segments(), tracer.points())));
    EXPECT_TRUE(testing::same_lines(trace_all(in_core, seeds, options.trace, 1), tracer.own_lines(seeds)));
  }
  tracer.start(seeds, 0);
  EXPECT_THROW(tracer.forget_lines(), UsageError);
  HandOffTrace rank_0_of_2(open_flow(flow.path, 0), 0, 2, options);
  EXPECT_THROW((void)rank_0_of_2.own_lines(seeds), UsageError);  // rank 0 joins every rank's lines
}

TEST(HandOffTrace, ARankHoldsItsPlanesOfBlocksAndTheirNeighboursOnly) {
  testing::BlockedFlow flow(32, 24, 16);
  const FlowField opened = open_flow(flow.path, 0);
  ContainerTraceOptions options = resident_options();
  options.backend = io::BackendKind::posix;
  options.cache_bytes = 1 << 20;
  const HandOffTrace first(opened, 0, 4, options), middle(opened, 1, 4, options);
  EXPECT_EQ(first.resident_blocks(), 2u * 48);  // its plane and the next
  EXPECT_EQ(middle.resident_blocks(), 3u * 48);
  EXPECT_EQ(first.owner_of(47), 0u);
  EXPECT_EQ(first.owner_of(48), 1u);
  EXPECT_EQ(first.stats().bytes_read, 2u * 48 * 768);
  options.cache_bytes = 8 * 768 - 1;  // fewer than 8 blocks
  EXPECT_THROW(HandOffTrace(opened, 0, 4, options), UsageError);
  options.cache_bytes = 1 << 20;
  EXPECT_THROW(HandOffTrace(opened, 0, 5, options), UsageError);  // more ranks than planes
  const std::string hilbert = flow.dir.file("hilbert.hrc");
  (void)convert_blocks_to_hilbert(flow.path, hilbert, 2, 3);
  EXPECT_THROW(HandOffTrace(open_flow(hilbert, 0), 0, 2, options), UsageError);
  EXPECT_THROW((void)assemble_handed(swirl_seeds(1), options.trace, {}, {}, {}), UsageError);  // a line that never ended
}

TEST(HandOffTraceGpu, LinesHandedBetweenGpuRanksAreTheHostsLines) {
  if (gpu::device_count() == 0) GTEST_SKIP() << "no GPU: " << (gpu::driver() ? "no device" : gpu::why_no_driver());
  testing::BlockedFlow flow(32, 24, 16);
  ContainerTraceOptions options = resident_options();
  options.device = 0;
  const std::vector<Vec3> seeds = swirl_seeds(200);
  const InMemoryField in_core{flow.layout.grid, flow.linear.data()};
  for (const std::uint64_t cache_bytes : {std::uint64_t{1} << 20, std::uint64_t{40} * 768}) {  // blocks resident; loaded by rounds
    options.cache_bytes = cache_bytes;
    std::uint64_t handed = 0;
    const Polylines lines = trace_handed(flow.path, seeds, options, 3, handed);
    EXPECT_TRUE(testing::same_lines(trace_all(in_core, seeds, options.trace, 1), lines)) << cache_bytes << " bytes of cache";
    EXPECT_GT(handed, 0u);
  }
}

// The GPU's kernel against the host executor: the same rounds, the same math with IEEE operations
// only (no fused multiply-adds on either side, RK45's fifth root by Newton's method): the same bits.
TEST(ResidentTracerGpu, TheKernelTracesTheHostExecutorsLines) {
  if (gpu::device_count() == 0) GTEST_SKIP() << "no GPU: " << (gpu::driver() ? "no device" : gpu::why_no_driver());
  testing::BlockedFlow flow(32, 24, 16);
  const std::string hilbert = flow.dir.file("hilbert.hrc");
  (void)convert_blocks_to_hilbert(flow.path, hilbert, 2, 3);
  ContainerTraceOptions options = resident_options();
  const std::vector<Vec3> seeds = swirl_seeds(200);
  for (Integrator integrator : {Integrator::rk4, Integrator::rk45}) {
    options.trace.integrator = integrator;
    for (const auto& [path, unit_bytes, slots] : {std::tuple{flow.path, std::uint64_t{768}, 16u},
                                                  std::tuple{hilbert, 3 * page_bytes, 8u}}) {
      options.cache_bytes = slots * unit_bytes;
      options.device = -1;
      const auto host = trace_container(path, seeds, options);
      options.device = 0;
      const auto gpu = trace_container(path, seeds, options);
      EXPECT_TRUE(testing::close_lines(host.lines, gpu.lines, 1e-4f)) << path << " " << static_cast<int>(integrator);
      EXPECT_TRUE(testing::same_lines(host.lines, gpu.lines)) << path << " " << static_cast<int>(integrator);
      EXPECT_GT(gpu.resident.rounds, 2u);
      EXPECT_GT(gpu.resident.evictions, 0u);
    }
  }
  // Each direction's points placed in the seeds' lines by the GPU as the host joins them.
  options.cache_bytes = 16 * 768;
  for (Direction direction : {Direction::forward, Direction::backward, Direction::both}) {
    options.trace.direction = direction;
    options.device = -1;
    const auto host = trace_container(flow.path, seeds, options);
    options.device = 0;
    const auto gpu = trace_container(flow.path, seeds, options);
    EXPECT_TRUE(testing::same_lines(host.lines, gpu.lines)) << static_cast<int>(direction);
  }
  // The kernel's velocities at the lines' points are the host executor's (and so sample_flow's), the
  // whole field resident or a few units; sampled at the points the GPU kept, on the tracer's own thread
  // after it returned: the caller's copy of the points is its to write over meanwhile.
  options.sample_velocities = true;
  for (const auto& [path, cache_bytes] : {std::pair{flow.path, std::uint64_t{1} << 20}, std::pair{hilbert, std::uint64_t{1} << 20},
                                          std::pair{flow.path, std::uint64_t{16 * 768}}, std::pair{hilbert, 8 * 3 * page_bytes}}) {
    options.cache_bytes = cache_bytes;
    options.device = -1;
    auto host = trace_container(path, seeds, options);
    options.device = 0;
    auto gpu = trace_container(path, seeds, options);
    EXPECT_TRUE(testing::same_lines(host.lines, gpu.lines)) << path;
    std::fill(gpu.lines.points.begin(), gpu.lines.points.end(), Vec3{-1.0f, -1.0f, -1.0f});
    const std::vector<Vec3> gpu_velocities = gpu.velocities.get().values;
    ASSERT_FALSE(gpu_velocities.empty()) << path;
    EXPECT_TRUE(same_bits(host.velocities.get().values, gpu_velocities)) << path;
  }
}

}  // namespace
}  // namespace headrace::workloads::streamlines
