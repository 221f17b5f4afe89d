// The Hilbert layout: the converter puts every point where position_of says, and the cached Hilbert
// field traces the in-core streamlines bit for bit whatever unit size the cache reads with.
#include "headrace/workloads/streamlines/hilbert_field.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "headrace/error.hpp"
#include "headrace/workloads/streamlines/in_memory_field.hpp"
#include "headrace/workloads/streamlines/tracer.hpp"
#include "workloads/flow_fixture.hpp"
#include "workloads/same_lines.hpp"

namespace headrace::workloads::streamlines {
namespace {

TEST(HilbertField, TheConverterStoresEveryPointAtItsHilbertPosition) {
  testing::BlockedFlow flow;
  const std::string out = flow.dir.file("flow-hilbert.hrc");
  std::uint64_t last_done = 0, last_total = 0;
  const double seconds = convert_blocks_to_hilbert(flow.path, out, 2, 3, [&](std::uint64_t done, std::uint64_t total) {
    last_done = done;
    last_total = total;
  });
  EXPECT_GT(seconds, 0.0);
  EXPECT_EQ(last_done, last_total);
  EXPECT_EQ(last_total, 4u * 3 * 2);  // partitions of 4^3 in a 16 x 12 x 8 grid, one frame
  const auto container = format::Container::open(out);
  const auto layout = hilbert_layout_of(container);
  EXPECT_EQ(layout.partition(), 4u);
  const auto all = container.chunks_of(0, 0);
  for (std::size_t c = 0; c + 1 < all.size(); ++c) EXPECT_EQ(all[c].raw_size, 3 * page_bytes) << c;  // the last may be short
  auto backend = io::open_backend(io::BackendKind::posix, out);
  std::vector<float> serial(flow.linear.size());
  const auto chunks = container.chunks_of(0, 0);
  backend->submit({{chunks.front().offset, serial.size() * 4, serial.data()}})->check();  // contiguous
  const auto& d = layout.grid.dims;
  for (int k = 0; k < d[2]; ++k)
    for (int j = 0; j < d[1]; ++j)
      for (int i = 0; i < d[0]; ++i) {
        const std::size_t n = i + std::size_t(d[0]) * (j + std::size_t(d[1]) * k);
        const std::uint64_t at = layout.position_of(i, j, k);
        ASSERT_EQ(std::memcmp(&serial[3 * at], &flow.linear[3 * n], 12), 0) << i << " " << j << " " << k;
      }
}

// A grid its partitions divide (32 x 24 x 16, partitions of 4: 36 pages), and one they do not (36 x 26 x
// 18 in partitions of 8, from partial blocks of 4): the partial partitions at the edges stored whole.
struct HilbertGrid {
  int dims[3];
  std::uint32_t bits;
  std::uint64_t stored_points;
};

class HilbertFieldGrids : public ::testing::TestWithParam<HilbertGrid> {};

TEST_P(HilbertFieldGrids, TracesTheInCoreStreamlinesWithAnyUnitSize) {
  const HilbertGrid grid = GetParam();
  testing::BlockedFlow flow(grid.dims[0], grid.dims[1], grid.dims[2]);
  const std::string out = flow.dir.file("flow-hilbert.hrc");
  (void)convert_blocks_to_hilbert(flow.path, out, grid.bits, 3);
  const auto container = format::Container::open(out);
  const auto layout = hilbert_layout_of(container);
  EXPECT_EQ(container.frame_field(0, 0).element_count, grid.stored_points);
  const InMemoryField in_core{layout.grid, flow.linear.data()};
  std::vector<Vec3> seeds;
  for (int s = 0; s < 32; ++s) seeds.push_back({2.0f + 0.1f * s, 2.9f, 0.1f + 0.1f * s});
  TraceOptions options;
  options.step_size = 0.02f;
  options.max_steps = 300;
  const auto reference = trace_all(in_core, seeds, options, 1);
  std::shared_ptr<io::Backend> backend = io::open_backend(io::BackendKind::direct, out);
  for (std::uint64_t pages : {3, 12}) {
    const std::uint64_t unit = pages * page_bytes;
    BlockCache cache(unit, 2 * unit, 1, contiguous_field_loader(backend, container, 0, 0, unit));
    const CachedHilbertField field(layout, cache);
    const auto streamed = trace_all(field, seeds, options, 12);
    ASSERT_TRUE(testing::same_lines(reference, streamed)) << pages << " pages";
    EXPECT_GT(cache.stats().evictions, 0u) << pages;  // more units were needed than the cache holds
  }
  BlockCache odd(4096, 4 * 4096, 1, contiguous_field_loader(backend, container, 0, 0, 4096));
  EXPECT_THROW(CachedHilbertField(layout, odd), UsageError);  // 4096 bytes do not hold whole points
}

INSTANTIATE_TEST_SUITE_P(Grids, HilbertFieldGrids,
                         ::testing::Values(HilbertGrid{{32, 24, 16}, 2, 32 * 24 * 16},
                                           HilbertGrid{{36, 26, 18}, 3, 5 * 4 * 3 * 512}),
                         [](const auto& info) { return info.index == 0 ? std::string("Divided") : std::string("Partial"); });

TEST(HilbertField, BadPartitionsAndChunksAreRefusedAndLeaveNoFile) {
  testing::BlockedFlow flow;
  const std::string out = flow.dir.file("bad.hrc");
  EXPECT_THROW((void)convert_blocks_to_hilbert(flow.path, out, 0, 3), UsageError);  // partitions of 2^0
  EXPECT_THROW((void)convert_blocks_to_hilbert(flow.path, out, 2, 4), UsageError);  // 4 pages: partial points
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
}

}  // namespace
}  // namespace headrace::workloads::streamlines
