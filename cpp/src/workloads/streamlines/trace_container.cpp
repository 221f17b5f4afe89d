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

}  // namespace

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
