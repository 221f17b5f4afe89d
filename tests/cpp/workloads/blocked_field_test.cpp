// Native blocks through the block cache give the in-core field's velocities and streamlines bit for
// bit, with a cache far smaller than the data, on many threads and over every host backend; a block
// that cannot be read stops the trace with an error instead of reading as zeros.
#include "headrace/workloads/streamlines/blocked_field.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <random>
#include <vector>

#include "headrace/error.hpp"
#include "headrace/workloads/streamlines/in_memory_field.hpp"
#include "headrace/workloads/streamlines/tracer.hpp"
#include "workloads/flow_fixture.hpp"
#include "workloads/same_lines.hpp"

namespace headrace::workloads::streamlines {
namespace {

TEST(BlockedField, ReadsTheLayoutFromTheContainer) {
  testing::BlockedFlow flow;
  const auto container = format::Container::open(flow.path);
  const auto layout = block_layout_of(container);
  EXPECT_EQ(layout.grid.dims[0], 16);
  EXPECT_EQ(layout.block[2], 4);
  EXPECT_EQ(layout.block_count(), 4u * 3 * 2);
  EXPECT_FLOAT_EQ(layout.grid.spacing[1], 0.25f);
  BlockLayout uneven = layout;
  uneven.block[0] = 5;  // 16 = 5 + 5 + 5 + 1: the fourth block is partial
  EXPECT_NO_THROW(uneven.check());
  EXPECT_EQ(uneven.block_count(), 4u * 3 * 2);
  std::uint64_t element = 0;
  EXPECT_EQ(uneven.unit_of(15, 11, 7, element), 4u * 3 * 2 - 1);
  EXPECT_EQ(element, 0 + 5 * (3 + 4 * 3));
  uneven.block[1] = 0;
  EXPECT_THROW(uneven.check(), UsageError);
}

// A grid that blocks of 4 do not divide (18 x 13 x 9): its partial blocks at the edges stored whole.
TEST(BlockedField, PartialBlocksAtTheEdgesGiveTheInCoreStreamlines) {
  testing::BlockedFlow flow(18, 13, 9);
  const auto container = format::Container::open(flow.path);
  const auto layout = block_layout_of(container);
  EXPECT_EQ(layout.block_count(), 5u * 4 * 3);
  std::shared_ptr<io::Backend> backend = io::open_backend(io::BackendKind::posix, flow.path);
  const std::uint64_t block_bytes = layout.block_points() * 12;
  BlockCache cache(block_bytes, 4 * block_bytes, 1, container_block_loader(backend, container, 0, 0, layout));
  const CachedBlockField out_of_core(layout, cache);
  const InMemoryField in_core{layout.grid, flow.linear.data()};
  std::vector<Vec3> seeds;
  for (int s = 0; s < 40; ++s) seeds.push_back({0.1f * s, 1.4f + 0.04f * s, 0.05f * s});  // some leave at the far edges
  TraceOptions options;
  options.step_size = 0.02f;
  options.max_steps = 400;
  const auto reference = trace_all(in_core, seeds, options, 1);
  ASSERT_TRUE(testing::same_lines(reference, trace_all(out_of_core, seeds, options, 8)));
  EXPECT_TRUE(std::any_of(reference.lines.begin(), reference.lines.end(),
                          [](const Streamline& line) { return line.forward_end == Termination::left_domain; }));
}

class BlockedFieldOnBackends : public ::testing::TestWithParam<io::BackendKind> {};

TEST_P(BlockedFieldOnBackends, GivesTheInCoreStreamlinesWithATinyCache) {
  testing::BlockedFlow flow;
  if (auto why = io::unavailable_reason(GetParam(), flow.path)) GTEST_SKIP() << *why;
  const auto container = format::Container::open(flow.path);
  const auto layout = block_layout_of(container);
  std::shared_ptr<io::Backend> backend = io::open_backend(GetParam(), flow.path);
  const std::uint64_t block_bytes = layout.block_points() * 12;
  BlockCache cache(block_bytes, 4 * block_bytes, 2, container_block_loader(backend, container, 0, 0, layout));
  const CachedBlockField out_of_core(layout, cache);
  GridGeometry grid = layout.grid;
  const InMemoryField in_core{grid, flow.linear.data()};

  std::mt19937 random(3);
  for (int n = 0; n < 500; ++n) {
    const Vec3 p{3.75f * (random() % 1000) / 999.0f, 2.75f * (random() % 1000) / 999.0f, 1.75f * (random() % 1000) / 999.0f};
    Vec3 a, b;
    ASSERT_TRUE(out_of_core(p, a));
    ASSERT_TRUE(in_core(p, b));
    ASSERT_EQ(a.x, b.x);
    ASSERT_EQ(a.y, b.y);
    ASSERT_EQ(a.z, b.z);
  }
  std::vector<Vec3> seeds;
  for (int s = 0; s < 40; ++s) seeds.push_back({1.0f + 0.05f * s, 1.4f, 0.2f + 0.03f * s});
  TraceOptions options;
  options.step_size = 0.02f;
  options.max_steps = 300;
  const auto reference = trace_all(in_core, seeds, options, 1);
  const auto streamed = trace_all(out_of_core, seeds, options, 16);
  ASSERT_TRUE(testing::same_lines(reference, streamed));
  const auto stats = cache.stats();
  EXPECT_GT(stats.evictions, 0u);  // the data did not fit: it was truly out of core
  EXPECT_EQ(stats.bytes_read, stats.misses * block_bytes);
}

INSTANTIATE_TEST_SUITE_P(Backends, BlockedFieldOnBackends,
                         ::testing::Values(io::BackendKind::posix, io::BackendKind::direct, io::BackendKind::mmap,
                                           io::BackendKind::uring),
                         [](const auto& info) { return std::string(io::to_string(info.param)); });

TEST(BlockedField, ABlockThatCannotBeReadStopsTheTrace) {
  testing::BlockedFlow flow;
  const auto container = format::Container::open(flow.path);
  const auto layout = block_layout_of(container);
  const std::uint64_t block_bytes = layout.block_points() * 12;
  auto read = container_block_loader(io::open_backend(io::BackendKind::posix, flow.path), container, 0, 0, layout);
  BlockCache cache(block_bytes, 4 * block_bytes, 1, [&](std::uint64_t unit, std::span<std::byte> into) {
    if (unit == 5) throw SystemError("flow.hrc: block 5: read failed (injected)", 5);
    read(unit, into);
  });
  const CachedBlockField field(layout, cache);
  TraceOptions options;
  options.step_size = 0.05f;
  options.max_steps = 2000;
  std::vector<Vec3> seeds;
  for (int s = 0; s < 24; ++s) seeds.push_back({0.15f * s, 0.1f * s, 0.07f * s});
  try {
    (void)trace_all(field, seeds, options, 4);
    FAIL() << "a trace through an unreadable block finished";
  } catch (const SystemError& error) {
    EXPECT_NE(std::string(error.what()).find("block 5"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace headrace::workloads::streamlines
