// One call per run: seed 002's four implementations (native-user, native-mmap, hilbert-user,
// hilbert-mmap) on the same container give the in-core streamlines; bad containers are refused.
#include "headrace/workloads/streamlines/trace_container.hpp"

#include <gtest/gtest.h>

#include "headrace/error.hpp"
#include "headrace/workloads/streamlines/hilbert_field.hpp"
#include "headrace/workloads/streamlines/in_memory_field.hpp"
#include "support/container_fixture.hpp"
#include "workloads/flow_fixture.hpp"

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
      ASSERT_EQ(run.lines.offsets, reference.offsets) << layout << " " << to_string(manager);
      for (std::size_t n = 0; n < reference.points.size(); ++n)
        ASSERT_EQ(run.lines.points[n].x, reference.points[n].x) << layout << " " << to_string(manager) << " " << n;
      if (manager == DataManager::user) {
        EXPECT_GT(run.cache.evictions, 0u) << layout;
        EXPECT_EQ(run.cache.bytes_read, run.cache.misses * run.unit_bytes) << layout;
      }
      EXPECT_GT(run.seconds, 0.0);
    }
  }
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
