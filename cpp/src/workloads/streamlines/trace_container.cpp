#include "headrace/workloads/streamlines/trace_container.hpp"

#include <chrono>
#include <memory>
#include <variant>

#include "headrace/error.hpp"
#include "headrace/workloads/streamlines/blocked_field.hpp"
#include "headrace/workloads/streamlines/hilbert_field.hpp"

namespace headrace::workloads::streamlines {
namespace {

std::string layout_name(const format::Container& container) {
  const auto found = container.attributes().find("layout");
  const auto* name = found == container.attributes().end() ? nullptr : std::get_if<std::string>(&found->second);
  HEADRACE_EXPECT(name != nullptr && (*name == "blocks" || *name == "hilbert"), UsageError,
                  container.path() + ": expected a flow field with attribute layout \"blocks\" or \"hilbert\"");
  return *name;
}

template <typename Sampler>
Polylines timed_trace(const Sampler& sampler, const std::vector<Vec3>& seeds, const ContainerTraceOptions& options,
                      double& seconds) {
  const auto start = std::chrono::steady_clock::now();
  Polylines lines = trace_all(sampler, seeds, options.trace, options.threads);
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
  const auto container = format::Container::open(path);
  HEADRACE_EXPECT(frame < container.frames().size(), UsageError, path + ": no frame " + std::to_string(frame));
  const std::uint32_t field = container.field_index("velocity");
  const MappedUnitsOptions quiet{.madvise_interval_s = 0, .memory_budget_bytes = 0};
  if (layout_name(container) == "blocks") {
    const BlockLayout layout = block_layout_of(container);
    MappedUnits units(path, layout.block_points() * point_bytes, block_offsets(container, frame, field, layout), 0, quiet);
    return scan_vorticity(BlockField<MappedUnits>(layout, units), layout.grid, low, high, stride, threads);
  }
  const HilbertLayout layout = hilbert_layout_of(container);
  MappedUnits units(path, point_bytes, {}, contiguous_field_range(container, frame, field).start, quiet);
  return scan_vorticity(HilbertField<MappedUnits>(layout, units), layout.grid, low, high, stride, threads);
}

const char* to_string(DataManager manager) noexcept { return manager == DataManager::user ? "user" : "mmap"; }

ContainerTraceRun trace_container(const std::string& path, const std::vector<Vec3>& seeds,
                                  const ContainerTraceOptions& options) {
  const auto container = format::Container::open(path);
  HEADRACE_EXPECT(options.frame < container.frames().size(), UsageError,
                  path + ": no frame " + std::to_string(options.frame) + " (" + std::to_string(container.frames().size()) +
                      " frames)");
  const std::uint32_t field = container.field_index("velocity");
  ContainerTraceRun run;
  run.layout = layout_name(container);
  const bool user = options.manager == DataManager::user;
  std::shared_ptr<io::Backend> backend;
  if (user) backend = io::open_backend(options.direct_io ? io::BackendKind::direct : io::BackendKind::posix, path);
  if (run.layout == "blocks") {
    const BlockLayout layout = block_layout_of(container);
    run.unit_bytes = layout.block_points() * point_bytes;
    if (user) {
      BlockCache cache(run.unit_bytes, options.cache_bytes, options.banks,
                       container_block_loader(backend, container, options.frame, field, layout));
      run.lines = timed_trace(BlockField<BlockCache>(layout, cache), seeds, options, run.seconds);
      run.cache = cache.stats();
    } else {
      MappedUnits units(path, run.unit_bytes, block_offsets(container, options.frame, field, layout), 0, options.mapped);
      run.lines = timed_trace(BlockField<MappedUnits>(layout, units), seeds, options, run.seconds);
      run.mapped = units.stats();
    }
  } else {
    const HilbertLayout layout = hilbert_layout_of(container);
    run.unit_bytes = std::uint64_t{options.unit_pages} * page_bytes;
    if (user) {
      BlockCache cache(run.unit_bytes, options.cache_bytes, options.banks,
                       contiguous_field_loader(backend, container, options.frame, field, run.unit_bytes));
      run.lines = timed_trace(HilbertField<BlockCache>(layout, cache), seeds, options, run.seconds);
      run.cache = cache.stats();
    } else {
      // Mapped pages are the transfer unit: the field is read as contiguous points.
      run.unit_bytes = point_bytes;
      MappedUnits units(path, point_bytes, {}, contiguous_field_range(container, options.frame, field).start, options.mapped);
      run.lines = timed_trace(HilbertField<MappedUnits>(layout, units), seeds, options, run.seconds);
      run.mapped = units.stats();
    }
  }
  return run;
}

}  // namespace headrace::workloads::streamlines
