// One call per run: seed 002's four implementations (native-user, native-mmap, hilbert-user,
// hilbert-mmap) on the same container give the in-core streamlines; bad containers are refused.
#include "headrace/workloads/streamlines/trace_container.hpp"

#include <gtest/gtest.h>

#include "headrace/error.hpp"
#include "headrace/workloads/streamlines/hilbert_field.hpp"
#include "headrace/workloads/streamlines/in_memory_field.hpp"
#include "support/container_fixture.hpp"
#include "workloads/flow_fixture.hpp"
#include "workloads/same_lines.hpp"

namespace headrace::workloads::streamlines {
namespace {

TEST(TraceContainer, TheFourImplementationsTraceTheInCoreStreamlines) {
  testing::BlockedFlow flow(32, 24, 16);
  const std::string hilbert = flow.dir.file("hilbert.hrc");
  (void)convert_blocks_to_hilbert(flow.path, hilbert, 2, 3);
  std::vector<Vec3> seeds;
  for (int s = 0; s < 24; ++s) seeds.push_back({2.0f + 0.1f * s, 2.9f, 0.1f + 0.1f * s});
  ContainerTraceOptions options;
  options.trace.step_size = 0.02f;
  options.trace.max_steps = 200;
  options.threads = 8;
  options.cache_bytes = 4 * 768;  // four 4^3 blocks
  options.banks = 2;
  options.unit_pages = 3;
  const InMemoryField in_core{flow.layout.grid, flow.linear.data()};
  const auto reference = trace_all(in_core, seeds, options.trace, 1);
  for (const auto& [path, layout] : {std::pair{flow.path, "blocks"}, std::pair{hilbert, "hilbert"}}) {
    for (DataManager manager : {DataManager::user, DataManager::mmap}) {
      options.manager = manager;
      options.cache_bytes = layout == std::string("blocks") ? 4 * 768 : 2 * 3 * page_bytes;
      const auto run = trace_container(path, seeds, options);
      EXPECT_EQ(run.layout, layout);
      ASSERT_TRUE(testing::same_lines(reference, run.lines)) << layout << " " << to_string(manager);
      if (manager == DataManager::user) {
        EXPECT_GT(run.cache.evictions, 0u) << layout;
        EXPECT_EQ(run.cache.bytes_read, run.cache.misses * run.unit_bytes) << layout;
      }
      EXPECT_GT(run.seconds, 0.0);
    }
  }
}

// The swirl's vorticity is (-0.2 x sin(xy), 0.1 cos z + 0.2 y sin(xy), 2): at least 2 everywhere.
TEST(TraceContainer, FeatureSeedsAreThePointsWhoseVorticityIsInRange) {
  testing::BlockedFlow flow(16, 12, 8);
  const std::string hilbert = flow.dir.file("hilbert.hrc");
  (void)convert_blocks_to_hilbert(flow.path, hilbert, 2, 3);
  EXPECT_TRUE(feature_seeds(flow.path, 0.0f, 1.9f, 1).empty());
  const auto all = feature_seeds(flow.path, 1.9f, 100.0f, 1, 0, 4);
  EXPECT_EQ(all.size(), 14u * 10 * 6);  // every interior point
  const auto every_other = feature_seeds(flow.path, 1.9f, 100.0f, 2);
  EXPECT_EQ(every_other.size(), 7u * 5 * 3);
  // A band that splits the points, found alike in both layouts, with the in-core differences.
  const auto band = feature_seeds(flow.path, 2.0f, 2.02f, 1);
  const auto band_hilbert = feature_seeds(hilbert, 2.0f, 2.02f, 1, 0, 3);
  ASSERT_EQ(band.size(), band_hilbert.size());
  for (std::size_t n = 0; n < band.size(); ++n) EXPECT_EQ(band[n].x, band_hilbert[n].x);
  EXPECT_GT(band.size(), 0u);
  EXPECT_LT(band.size(), all.size());
  const InMemoryField in_core{flow.layout.grid, flow.linear.data()};
  std::size_t expected = 0;
  for (int k = 1; k < 7; ++k)
    for (int j = 1; j < 11; ++j)
      for (int i = 1; i < 15; ++i) {
        auto v = [&](int a, int b, int c) { return in_core.at(a, b, c); };
        const Vec3 dx = (0.5f / 0.25f) * (v(i + 1, j, k) - v(i - 1, j, k));
        const Vec3 dy = (0.5f / 0.25f) * (v(i, j + 1, k) - v(i, j - 1, k));
        const Vec3 dz = (0.5f / 0.25f) * (v(i, j, k + 1) - v(i, j, k - 1));
        const float w = length(Vec3{dy.z - dz.y, dz.x - dx.z, dx.y - dy.x});
        expected += w >= 2.0f && w < 2.02f;
      }
  EXPECT_EQ(band.size(), expected);
  EXPECT_THROW((void)feature_seeds(flow.path, 3.0f, 2.0f, 1), UsageError);
}

TEST(TraceContainer, RefusesWhatIsNotAFlowField) {
  testing::TempDirectory dir;
  const auto path = dir.file("particles.hrc");
  testing::write_particles(path, 1, 100);
  ContainerTraceOptions options;
  EXPECT_THROW((void)trace_container(path, {{0, 0, 0}}, options), UsageError);
  testing::BlockedFlow flow;
  options.frame = 3;
  EXPECT_THROW((void)trace_container(flow.path, {{0, 0, 0}}, options), UsageError);
}

}  // namespace
}  // namespace headrace::workloads::streamlines
