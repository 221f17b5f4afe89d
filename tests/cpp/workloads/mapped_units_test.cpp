// The kernel-managed strategy: the mapped file traced on many threads while madvise drops the process's
// pages and a tiny budget drops the page cache gives the in-core streamlines bit for bit.
#include "headrace/workloads/streamlines/mapped_units.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "headrace/workloads/streamlines/blocked_field.hpp"
#include "headrace/workloads/streamlines/hilbert_field.hpp"
#include "headrace/workloads/streamlines/in_memory_field.hpp"
#include "headrace/workloads/streamlines/tracer.hpp"
#include "workloads/flow_fixture.hpp"
#include "workloads/same_lines.hpp"

namespace headrace::workloads::streamlines {
namespace {

std::vector<Vec3> seeds() {
  std::vector<Vec3> out;
  for (int s = 0; s < 32; ++s) out.push_back({2.0f + 0.1f * s, 2.9f, 0.1f + 0.1f * s});
  return out;
}

TraceOptions options() {
  TraceOptions o;
  o.step_size = 0.02f;
  o.max_steps = 300;
  return o;
}

// The watcher acts every 50 ms at most: wait for what it is expected to have done.
template <typename Done>
bool eventually(Done done) {
  for (int n = 0; n < 100 && !done(); ++n) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return done();
}

TEST(MappedUnits, NativeBlocksTraceTheInCoreStreamlinesWhilePagesAreDropped) {
  testing::BlockedFlow flow(32, 24, 16);
  const auto container = format::Container::open(flow.path);
  const auto layout = block_layout_of(container);
  const InMemoryField in_core{layout.grid, flow.linear.data()};
  MappedUnits units(flow.path, layout.block_points() * point_bytes, block_offsets(container, 0, 0, layout), 0,
                    {.madvise_interval_s = 0.001, .memory_budget_bytes = 8192});
  const BlockField<MappedUnits> mapped(layout, units);
  EXPECT_TRUE(testing::same_lines(trace_all(in_core, seeds(), options(), 1), trace_all(mapped, seeds(), options(), 16)));
  EXPECT_TRUE(eventually([&] { return units.stats().madvise_calls > 0 && units.stats().budget_drops > 0; }));
  EXPECT_GT(units.stats().max_resident_bytes, 8192u);
}

TEST(MappedUnits, AHilbertFieldTracesTheInCoreStreamlines) {
  testing::BlockedFlow flow(32, 24, 16);
  const std::string out = flow.dir.file("hilbert.hrc");
  (void)convert_blocks_to_hilbert(flow.path, out, 2, 3);
  const auto container = format::Container::open(out);
  const auto layout = hilbert_layout_of(container);
  const InMemoryField in_core{layout.grid, flow.linear.data()};
  MappedUnits units(out, 3 * page_bytes, {}, container.chunks_of(0, 0).front().offset, {.madvise_interval_s = 0});
  const HilbertField<MappedUnits> mapped(layout, units);
  EXPECT_TRUE(testing::same_lines(trace_all(in_core, seeds(), options(), 1), trace_all(mapped, seeds(), options(), 8)));
  EXPECT_EQ(units.stats().madvise_calls, 0u);
  EXPECT_GT(units.resident_bytes(), 0u);  // what the trace touched is in the page cache
}

}  // namespace
}  // namespace headrace::workloads::streamlines
