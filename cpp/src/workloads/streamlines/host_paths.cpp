// The reference runner of the pathline tracer's rounds: the same rounds on CPU threads over host memory.
#include <algorithm>
#include <memory>
#include <new>
#include <string>

#include "headrace/detail/aligned_buffer.hpp"
#include "headrace/detail/parallel_for.hpp"
#include "headrace/error.hpp"
#include "headrace/workloads/streamlines/unit_layouts.hpp"
#include "path_rounds.hpp"

namespace headrace::workloads::streamlines::resident {

namespace {

// Every path's points until the end, or a clear error where host memory lacks them.
std::vector<PathPoint> path_points(std::uint64_t paths, std::uint32_t capacity) {
  try {
    return std::vector<PathPoint>(paths * capacity);
  } catch (const std::bad_alloc&) {
    throw Error("pathlines: " + std::to_string(paths) + " paths of up to " + std::to_string(capacity) + " points (" +
                std::to_string(paths * capacity * sizeof(PathPoint) >> 20) +
                " MiB) do not fit in host memory: trace fewer seeds, fewer steps or on a GPU");
  }
}

template <typename Units>
class HostPaths final : public PathRunner<Units> {
 public:
  HostPaths(const Units& units, std::uint64_t units_per_frame, const TraceOptions& options, std::uint64_t unit_bytes,
            std::uint64_t slots, std::vector<PathLine> lines, unsigned threads)
      : params_(path_round_params(units, units_per_frame, options, unit_bytes)),
        unit_bytes_(unit_bytes),
        pool_(slots * unit_bytes),
        lines_(std::move(lines)),
        points_(path_points(lines_.size(), params_.point_capacity)),
        threads_(threads) {}

  [[nodiscard]] queue::MemoryKind memory() const override { return queue::MemoryKind::host; }
  [[nodiscard]] std::uintptr_t slot_address(std::uint64_t slot) const override {
    return reinterpret_cast<std::uintptr_t>(pool_.data() + slot * unit_bytes_);
  }
  void loaded(const engine::Queue&, queue::FenceId) override {}  // the queue's wait saw the bytes land
  PathCounters run(RoundState& state, const PathInterval& interval) override {
    PathCounters counters;
    PathRoundParams<Units> params = path_window_of(params_, state, interval);
    std::fill(state.wanted.begin(), state.wanted.end(), 0u);
    params.cache.slot_of_unit = state.slot_of_unit.data();
    params.cache.pool = reinterpret_cast<const float*>(pool_.data());
    params.cache.wanted = state.wanted.data();
    params.cache.last_used = state.last_used.data();
    params.lines = lines_.data();
    params.points = points_.data();
    params.counters = &counters;
    headrace::detail::parallel_for(params.line_count, threads_, [&](std::uint64_t k) { advance_resident_path(params, k); });
    return counters;
  }
  double collect(PathPlaceParams place, std::vector<PathLine>& lines, Pathlines& out) override {
    const std::vector<std::uint64_t> offsets = sized_for(lines_, out);
    place.points = points_.data();
    place.point_capacity = params_.point_capacity;
    place.offsets = offsets.data();
    place.count = lines_.size();
    place.out_points = out.points.data(), place.out_velocities = out.velocities.data(), place.out_times = out.times.data();
    headrace::detail::parallel_for(offsets.back(), threads_, [&](std::uint64_t k) { place_path_point(place, k); });
    lines = std::move(lines_);
    return 0;
  }

 private:
  PathRoundParams<Units> params_;
  std::uint64_t unit_bytes_;
  headrace::detail::AlignedBuffer pool_;
  std::vector<PathLine> lines_;
  std::vector<PathPoint> points_;
  unsigned threads_;
};

}  // namespace

template <typename Units>
std::unique_ptr<PathRunner<Units>> make_host_paths(const Units& units, std::uint64_t units_per_frame, const TraceOptions& options,
                                                   std::uint64_t unit_bytes, std::uint64_t slots, std::vector<PathLine> lines,
                                                   unsigned threads) {
  return std::make_unique<HostPaths<Units>>(units, units_per_frame, options, unit_bytes, slots, std::move(lines), threads);
}

template std::unique_ptr<PathRunner<BlockLayout>> make_host_paths<BlockLayout>(const BlockLayout&, std::uint64_t, const TraceOptions&, std::uint64_t, std::uint64_t, std::vector<PathLine>, unsigned);
template std::unique_ptr<PathRunner<HilbertUnits>> make_host_paths<HilbertUnits>(const HilbertUnits&, std::uint64_t, const TraceOptions&, std::uint64_t, std::uint64_t, std::vector<PathLine>, unsigned);

}  // namespace headrace::workloads::streamlines::resident
