// Native blocks through the block cache give the in-core field's velocities and streamlines bit for
// bit, with a cache far smaller than the data, on many threads and over every host backend; a block
// that cannot be read stops the trace with an error instead of reading as zeros.
#include "headrace/workloads/streamlines/blocked_field.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "headrace/codec/cpu/chunk_codec.hpp"
#include "headrace/error.hpp"
#include "headrace/format/writer.hpp"
#include "headrace/workloads/streamlines/in_memory_field.hpp"
#include "headrace/workloads/streamlines/tracer.hpp"
#include "support/temp_directory.hpp"

namespace headrace::workloads::streamlines {
namespace {

// A swirling field on a 16 x 12 x 8 grid in blocks of 4 x 4 x 4, written as a container.
struct BlockedFlow {
  testing::TempDirectory dir;
  std::string path = dir.file("flow.hrc");
  BlockLayout layout;
  std::vector<float> linear;  // x fastest over the whole grid: the in-core reference

  BlockedFlow() {
    layout.grid.dims[0] = 16, layout.grid.dims[1] = 12, layout.grid.dims[2] = 8;
    layout.grid.spacing[0] = layout.grid.spacing[1] = layout.grid.spacing[2] = 0.25f;
    layout.block[0] = layout.block[1] = layout.block[2] = 4;
    const auto& d = layout.grid.dims;
    linear.resize(3 * std::size_t(d[0]) * d[1] * d[2]);
    std::vector<float> blocked(linear.size());
    for (int k = 0; k < d[2]; ++k)
      for (int j = 0; j < d[1]; ++j)
        for (int i = 0; i < d[0]; ++i) {
          const float x = 0.25f * i - 2, y = 0.25f * j - 1.5f, z = 0.25f * k;
          const float v[3] = {-y + 0.1f * std::sin(z), x, 0.2f * std::cos(x * y)};
          const std::size_t n = i + std::size_t(d[0]) * (j + std::size_t(d[1]) * k);
          std::uint64_t element = 0;
          const std::uint64_t unit = layout.unit_of(i, j, k, element);
          for (int c = 0; c < 3; ++c) {
            linear[3 * n + c] = v[c];
            blocked[3 * (unit * layout.block_points() + element) + c] = v[c];
          }
        }
    format::WriterOptions options;
    options.chunk_size_bytes = 2 * layout.block_points() * 12;  // two blocks a chunk
    format::ContainerWriter writer(path, {{"velocity", format::DType::float32, 3}}, options);
    writer.set_attribute("layout", std::string("blocks"));
    writer.set_attribute("grid_dims", std::vector<std::int64_t>{16, 12, 8});
    writer.set_attribute("block_dims", std::vector<std::int64_t>{4, 4, 4});
    writer.set_attribute("grid_origin", std::vector<double>{0, 0, 0});
    writer.set_attribute("grid_spacing", std::vector<double>{0.25, 0.25, 0.25});
    const auto frame = writer.add_frame(0.0, format::BoundingBox{{0, 0, 0}, {3.75, 2.75, 1.75}});
    writer.write_field(frame, 0, std::as_bytes(std::span<const float>(blocked)));
    writer.close();
  }
};

TEST(BlockedField, ReadsTheLayoutFromTheContainer) {
  BlockedFlow flow;
  const auto container = format::Container::open(flow.path);
  const auto layout = block_layout_of(container);
  EXPECT_EQ(layout.grid.dims[0], 16);
  EXPECT_EQ(layout.block[2], 4);
  EXPECT_EQ(layout.block_count(), 4u * 3 * 2);
  EXPECT_FLOAT_EQ(layout.grid.spacing[1], 0.25f);
  BlockLayout uneven = layout;
  uneven.block[0] = 5;
  EXPECT_THROW(uneven.check(), UsageError);
}

class BlockedFieldOnBackends : public ::testing::TestWithParam<io::BackendKind> {};

TEST_P(BlockedFieldOnBackends, GivesTheInCoreStreamlinesWithATinyCache) {
  BlockedFlow flow;
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
  ASSERT_EQ(reference.offsets, streamed.offsets);
  for (std::size_t n = 0; n < reference.points.size(); ++n) {
    ASSERT_EQ(reference.points[n].x, streamed.points[n].x) << n;
    ASSERT_EQ(reference.points[n].y, streamed.points[n].y) << n;
    ASSERT_EQ(reference.points[n].z, streamed.points[n].z) << n;
  }
  const auto stats = cache.stats();
  EXPECT_GT(stats.evictions, 0u);  // the data did not fit: it was truly out of core
  EXPECT_EQ(stats.bytes_read, stats.misses * block_bytes);
}

INSTANTIATE_TEST_SUITE_P(Backends, BlockedFieldOnBackends,
                         ::testing::Values(io::BackendKind::posix, io::BackendKind::direct, io::BackendKind::mmap,
                                           io::BackendKind::uring),
                         [](const auto& info) { return std::string(io::to_string(info.param)); });

TEST(BlockedField, ABlockThatCannotBeReadStopsTheTrace) {
  BlockedFlow flow;
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
