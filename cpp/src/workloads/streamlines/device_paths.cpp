// The GPU runner of the pathline tracer's rounds: the pool, the table, the paths and their points in
// device memory, one thread a path (resident_rounds.cu).
#include <memory>

#include "headrace/detail/seconds.hpp"
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
        place_(gpu_.module.function("headrace_place_path_points")),
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
  // The points placed on the GPU, split as the caller keeps them, and brought home (gpu::HomeCopy): a path's capacity
  // is its longest (max_steps + 1), most end short of it, and the host has only to receive them.
  double collect(PathPlaceParams place, std::vector<PathLine>& lines, Pathlines& out) override {
    gpu_.device.make_current();
    lines.resize(count_);
    gpu_.stream.synchronize();
    if (count_ > 0) gpu::copy_to_host(lines.data(), lines_.pointer(), count_ * sizeof(PathLine));
    const std::vector<std::uint64_t> offsets = sized_for(lines, out);
    const std::uint64_t total = offsets.back();
    if (total == 0) return 0;
    const gpu::CudaDriver& cuda = gpu::require_driver();
    const gpu::CUstream stream = gpu_.stream.handle();
    gpu::DeviceBuffer offsets_on_device(offsets.size() * sizeof(std::uint64_t)), frame_times(place.frame_count * sizeof(double)),
        seed_times(count_ * sizeof(double)), points(total * sizeof(Vec3)), velocities(total * sizeof(Vec3)),
        times(total * sizeof(double));
    const auto upload = [&](const gpu::DeviceBuffer& to, const void* from) {
      gpu::check(cuda.cuMemcpyHtoDAsync(to.pointer(), from, to.size_bytes(), stream), "cuMemcpyHtoDAsync");
    };
    upload(offsets_on_device, offsets.data());
    upload(frame_times, place.frame_times);
    upload(seed_times, place.seed_times);
    place.points = params_.points;
    place.point_capacity = params_.point_capacity;
    place.offsets = reinterpret_cast<const std::uint64_t*>(offsets_on_device.pointer());
    place.count = count_;
    place.frame_times = reinterpret_cast<const double*>(frame_times.pointer());
    place.seed_times = reinterpret_cast<const double*>(seed_times.pointer());
    place.out_points = reinterpret_cast<Vec3*>(points.pointer());
    place.out_velocities = reinterpret_cast<Vec3*>(velocities.pointer());
    place.out_times = reinterpret_cast<double*>(times.pointer());
    std::uint64_t launched = total;
    void* args[] = {&place, &launched};
    gpu::launch_1d(place_, total, 256, stream, args);
    gpu_.stream.synchronize();  // placed: what follows is the copy home alone
    const auto home_start = headrace::detail::SteadyClock::now();
    gpu::HomeCopy home;
    home.copy(out.points.data(), points.pointer(), points.size_bytes(), stream);
    home.copy(out.velocities.data(), velocities.pointer(), velocities.size_bytes(), stream);
    home.copy(out.times.data(), times.pointer(), times.size_bytes(), stream);
    return headrace::detail::seconds_since(home_start);
  }

 private:
  DeviceCache gpu_;
  gpu::CUfunction advance_, place_;
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
