#include "headrace/workloads/streamlines/trace_container.hpp"

#include <chrono>
#include <limits>
#include <memory>
#include <variant>

#include "headrace/detail/parallel_for.hpp"
#include "headrace/error.hpp"
#include "headrace/workloads/streamlines/blocked_field.hpp"
#include "headrace/workloads/streamlines/hilbert_field.hpp"
#include "headrace/workloads/streamlines/resident_tracer.hpp"
#include "headrace/workloads/streamlines/flow_field.hpp"

namespace headrace::workloads::streamlines {
namespace {

// Calls use(sampler, grid, units) with the kernel-managed sampler of the flow's layout: the mapped file,
// in blocks, or in points of a contiguous Hilbert field (mapped pages are the transfer unit).
template <typename Use>
void with_mapped_sampler(const FlowField& flow, const MappedUnitsOptions& options, Use&& use) {
  const std::string& path = flow.container.path();
  if (flow.layout == "blocks") {
    const BlockLayout layout = block_layout_of(flow.container);
    MappedUnits units(path, layout.block_points() * point_bytes,
                      block_offsets(flow.container, flow.frame, flow.field, layout), 0, options);
    use(BlockField<MappedUnits>(layout, units), layout.grid, units);
    return;
  }
  const HilbertLayout layout = hilbert_layout_of(flow.container);
  MappedUnits units(path, point_bytes, {}, contiguous_field_range(flow.container, flow.frame, flow.field).start, options);
  use(HilbertField<MappedUnits>(layout, units), layout.grid, units);
}

// Calls use(sampler, cache) with the user-managed sampler of the flow's layout: a block cache of
// blocks, or of unit_pages-page runs of a contiguous Hilbert field, read through backend.
template <typename Use>
void with_cached_sampler(const FlowField& flow, std::shared_ptr<io::Backend> backend,
                         const ContainerTraceOptions& options, Use&& use) {
  if (flow.layout == "blocks") {
    const BlockLayout layout = block_layout_of(flow.container);
    BlockCache cache(layout.block_points() * point_bytes, options.cache_bytes, options.banks,
                     container_block_loader(std::move(backend), flow.container, flow.frame, flow.field, layout));
    use(BlockField<BlockCache>(layout, cache), cache);
    return;
  }
  const HilbertLayout layout = hilbert_layout_of(flow.container);
  const std::uint64_t unit_bytes = std::uint64_t{options.unit_pages} * page_bytes;
  BlockCache cache(unit_bytes, options.cache_bytes, options.banks,
                   contiguous_field_loader(std::move(backend), flow.container, flow.frame, flow.field, unit_bytes));
  use(HilbertField<BlockCache>(layout, cache), cache);
}

template <typename Sampler>
Polylines timed_trace(const Sampler& sampler, const std::vector<Vec3>& seeds, const ContainerTraceOptions& options,
                      double& seconds) {
  const auto start = std::chrono::steady_clock::now();
  Polylines lines = trace_all(sampler, seeds, options.trace, options.threads, options.progress);
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return lines;
}

// The vorticity magnitude at interior grid point (i, j, k), by central differences of node values.
template <typename Sampler>
float vorticity_at(const Sampler& sample, const GridGeometry& g, std::int32_t i, std::int32_t j, std::int32_t k) {
  auto node = [&](std::int32_t a, std::int32_t b, std::int32_t c) {
    Vec3 v;
    const Vec3 p{g.origin[0] + g.spacing[0] * static_cast<float>(a), g.origin[1] + g.spacing[1] * static_cast<float>(b),
                 g.origin[2] + g.spacing[2] * static_cast<float>(c)};
    (void)sample(p, v);  // interior nodes are inside the grid
    return v;
  };
  const Vec3 dx = (0.5f / g.spacing[0]) * (node(i + 1, j, k) - node(i - 1, j, k));
  const Vec3 dy = (0.5f / g.spacing[1]) * (node(i, j + 1, k) - node(i, j - 1, k));
  const Vec3 dz = (0.5f / g.spacing[2]) * (node(i, j, k + 1) - node(i, j, k - 1));
  return length(Vec3{dy.z - dz.y, dz.x - dx.z, dx.y - dy.x});
}

template <typename Sampler>
std::vector<Vec3> scan_vorticity(const Sampler& sample, const GridGeometry& g, float low, float high,
                                 std::uint32_t stride, unsigned threads) {
  std::vector<std::int32_t> planes;
  for (std::int32_t k = 1; k < g.dims[2] - 1; k += static_cast<std::int32_t>(stride)) planes.push_back(k);
  std::vector<std::vector<Vec3>> found(planes.size());
  headrace::detail::parallel_for(planes.size(), threads, [&](std::uint64_t n) {
    const std::int32_t k = planes[n];
    for (std::int32_t j = 1; j < g.dims[1] - 1; j += static_cast<std::int32_t>(stride))
      for (std::int32_t i = 1; i < g.dims[0] - 1; i += static_cast<std::int32_t>(stride)) {
        const float w = vorticity_at(sample, g, i, j, k);
        if (w >= low && w < high)
          found[n].push_back({g.origin[0] + g.spacing[0] * static_cast<float>(i), g.origin[1] + g.spacing[1] * static_cast<float>(j),
                              g.origin[2] + g.spacing[2] * static_cast<float>(k)});
      }
  });
  std::vector<Vec3> seeds;
  for (auto& plane : found) seeds.insert(seeds.end(), plane.begin(), plane.end());
  return seeds;
}

}  // namespace

std::vector<Vec3> feature_seeds(const std::string& path, float low, float high, std::uint32_t stride, std::uint32_t frame,
                                unsigned threads) {
  HEADRACE_EXPECT(stride >= 1 && low < high, UsageError,
                  "feature seeding needs a stride of at least 1 and a range low < high, got stride " +
                      std::to_string(stride) + " and [" + std::to_string(low) + ", " + std::to_string(high) + ")");
  std::vector<Vec3> seeds;
  with_mapped_sampler(open_flow(path, frame), {.madvise_interval_s = 0, .memory_budget_bytes = 0},
                      [&](const auto& sampler, const GridGeometry& grid, MappedUnits&) {
                        seeds = scan_vorticity(sampler, grid, low, high, stride, threads);
                      });
  return seeds;
}

void sample_flow(const std::string& path, std::span<const Vec3> points, std::span<Vec3> velocities, std::uint32_t frame,
                 unsigned threads) {
  HEADRACE_EXPECT(velocities.size() == points.size(), UsageError, "a velocity for every point: as many of both");
  with_mapped_sampler(open_flow(path, frame), {.madvise_interval_s = 0, .memory_budget_bytes = 0},
                      [&](const auto& sampler, const GridGeometry&, MappedUnits&) {
                        headrace::detail::parallel_for(points.size(), threads, [&](std::uint64_t i) {
                          if (!sampler(points[i], velocities[i])) {
                            const float nan = std::numeric_limits<float>::quiet_NaN();
                            velocities[i] = {nan, nan, nan};  // outside the grid
                          }
                        });
                      });
}

ContainerTraceRun trace_container(const std::string& path, const std::vector<Vec3>& seeds,
                                  const ContainerTraceOptions& options) {
  const FlowField flow = open_flow(path, options.frame);
  if (options.manager == DataManager::resident) return trace_resident(flow, seeds, options);
  HEADRACE_EXPECT(options.device < 0, UsageError,
                  std::string("the GPU traces through the resident manager, not ") + to_string(options.manager));
  ContainerTraceRun run;
  run.layout = flow.layout;
  if (options.manager == DataManager::user) {
    auto backend = io::open_backend(options.direct_io ? io::BackendKind::direct : io::BackendKind::posix, path);
    with_cached_sampler(flow, std::move(backend), options, [&](const auto& sampler, BlockCache& cache) {
      run.unit_bytes = cache.unit_bytes();
      run.lines = timed_trace(sampler, seeds, options, run.seconds);
      run.cache = cache.stats();
    });
  } else {
    with_mapped_sampler(flow, options.mapped, [&](const auto& sampler, const GridGeometry&, MappedUnits& units) {
      run.unit_bytes = units.unit_bytes();
      run.lines = timed_trace(sampler, seeds, options, run.seconds);
      run.mapped = units.stats();
    });
  }
  return run;
}

}  // namespace headrace::workloads::streamlines
