// The GPU runner of the pathline tracer's rounds: the pool, the table, the paths and their points in
// device memory, one thread a path (resident_rounds.cu).
#include <memory>

#include "headrace/workloads/streamlines/unit_layouts.hpp"
#include "device_cache.hpp"
#include "path_rounds.hpp"

namespace headrace::workloads::streamlines::resident {

namespace {

template <typename Units>
struct PathKernel;
template <>
struct PathKernel<BlockLayout> {
  static constexpr const char* name = "headrace_advance_paths_blocks";
};
template <>
struct PathKernel<HilbertUnits> {
  static constexpr const char* name = "headrace_advance_paths_hilbert";
};

template <typename Units>
class DevicePaths final : public PathRunner<Units> {
 public:
  DevicePaths(int ordinal, const Units& units, std::uint64_t units_per_frame, const TraceOptions& options,
              std::uint64_t unit_bytes, std::uint64_t slots, std::uint64_t unit_count, const std::vector<PathLine>& lines)
      : gpu_(ordinal, unit_bytes, slots, unit_count),
        advance_(gpu_.module.function(PathKernel<Units>::name)),
        gather_(gpu_.module.function("headrace_gather_path_points")),
        params_(path_round_params(units, units_per_frame, options, unit_bytes)),
        count_(lines.size()),
        lines_(std::max<std::uint64_t>(count_, 1) * sizeof(PathLine)),
        points_(std::max<std::uint64_t>(count_, 1) * params_.point_capacity * sizeof(PathPoint)) {
    params_.cache = gpu_.units(params_.cache.unit_floats);
    params_.counters = gpu_.counters<PathCounters>();
    params_.lines = reinterpret_cast<PathLine*>(lines_.pointer());
    params_.points = reinterpret_cast<PathPoint*>(points_.pointer());
    if (count_ > 0)
      gpu::check(gpu::require_driver().cuMemcpyHtoDAsync(lines_.pointer(), lines.data(), count_ * sizeof(PathLine), gpu_.stream.handle()),
                 "cuMemcpyHtoDAsync");
    gpu_.stream.synchronize();
  }

  [[nodiscard]] queue::MemoryKind memory() const override { return queue::MemoryKind::device; }
  [[nodiscard]] std::uintptr_t slot_address(std::uint64_t slot) const override { return gpu_.slot_address(slot); }
  void loaded(const engine::Queue& queue, queue::FenceId fence) override { gpu_.loaded(queue, fence); }
  PathCounters run(RoundState& state, const PathInterval& interval) override {
    const PathRoundParams<Units> params = path_window_of(params_, state, interval);
    return gpu_.launch_round<PathCounters>(state, advance_, params, params.line_count);
  }
  // The points gathered on the GPU: a path's capacity is its longest (max_steps + 1), and most end short of it.
  void collect(std::vector<PathLine>& lines, std::vector<PathPoint>& points) override {
    gpu_.device.make_current();
    lines.resize(count_);
    gpu_.stream.synchronize();
    if (count_ > 0) gpu::copy_to_host(lines.data(), lines_.pointer(), count_ * sizeof(PathLine));
    const std::vector<std::uint64_t> offsets = path_offsets(lines);
    points.resize(offsets.back());
    if (offsets.back() == 0) return;
    const gpu::CudaDriver& cuda = gpu::require_driver();
    const gpu::CUstream stream = gpu_.stream.handle();
    gpu::DeviceBuffer offsets_on_device(offsets.size() * sizeof(std::uint64_t)), gathered(offsets.back() * sizeof(PathPoint));
    gpu::check(cuda.cuMemcpyHtoDAsync(offsets_on_device.pointer(), offsets.data(), offsets_on_device.size_bytes(), stream),
               "cuMemcpyHtoDAsync");
    PathGatherParams gather{params_.points, params_.point_capacity, reinterpret_cast<const std::uint64_t*>(offsets_on_device.pointer()),
                            count_, reinterpret_cast<PathPoint*>(gathered.pointer())};
    std::uint64_t total = offsets.back();
    void* args[] = {&gather, &total};
    gpu::launch_1d(gather_, total, 256, stream, args);
    gpu::check(cuda.cuMemcpyDtoHAsync(points.data(), gathered.pointer(), gathered.size_bytes(), stream), "cuMemcpyDtoHAsync");
    gpu_.stream.synchronize();
  }

 private:
  DeviceCache gpu_;
  gpu::CUfunction advance_, gather_;
  PathRoundParams<Units> params_;
  std::uint64_t count_;
  gpu::DeviceBuffer lines_, points_;
};

}  // namespace

template <typename Units>
std::unique_ptr<PathRunner<Units>> make_device_paths(int device, const Units& units, std::uint64_t units_per_frame,
                                                     const TraceOptions& options, std::uint64_t unit_bytes, std::uint64_t slots,
                                                     std::uint64_t unit_count, const std::vector<PathLine>& lines) {
  return std::make_unique<DevicePaths<Units>>(device, units, units_per_frame, options, unit_bytes, slots, unit_count, lines);
}

template std::unique_ptr<PathRunner<BlockLayout>> make_device_paths<BlockLayout>(int, const BlockLayout&, std::uint64_t, const TraceOptions&, std::uint64_t, std::uint64_t, std::uint64_t, const std::vector<PathLine>&);
template std::unique_ptr<PathRunner<HilbertUnits>> make_device_paths<HilbertUnits>(int, const HilbertUnits&, std::uint64_t, const TraceOptions&, std::uint64_t, std::uint64_t, std::uint64_t, const std::vector<PathLine>&);

}  // namespace headrace::workloads::streamlines::resident
