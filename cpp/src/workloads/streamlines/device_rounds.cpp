// The GPU runner of the tracer's rounds: the pool, the table and the lines in device memory, one thread
// per half-line (resident_rounds.cu).
#include <algorithm>
#include <memory>

#include "headrace/workloads/streamlines/unit_layouts.hpp"
#include "device_cache.hpp"
#include "half_lines.hpp"
#include "round_runner.hpp"

namespace headrace::workloads::streamlines::resident {

namespace {

// The kernels of resident_rounds.cu for a layout: its round, and its sampling of the lines' velocities.
template <typename Units>
struct Kernels;
template <>
struct Kernels<BlockLayout> {
  static constexpr const char* advance = "headrace_advance_blocks";
  static constexpr const char* sample = "headrace_sample_blocks";
};
template <>
struct Kernels<HilbertUnits> {
  static constexpr const char* advance = "headrace_advance_hilbert";
  static constexpr const char* sample = "headrace_sample_hilbert";
};

template <typename Units>
class DeviceRounds final : public RoundRunner<Units> {
 public:
  DeviceRounds(int ordinal, const Units& units, const TraceOptions& options, std::uint64_t unit_bytes,
               std::uint64_t slots, std::uint64_t unit_count, const std::vector<HalfLine>& lines)
      : gpu_(ordinal, unit_bytes, slots, unit_count),
        device_(gpu_.device),
        stream_(gpu_.stream),
        kernel_(gpu_.module.function(Kernels<Units>::advance)),
        gather_(gpu_.module.function("headrace_gather_points")),
        place_(gpu_.module.function("headrace_place_points")),
        place_seeds_(gpu_.module.function("headrace_place_seeds")),
        sample_(gpu_.module.function(Kernels<Units>::sample)),
        params_(round_params(units, options, unit_bytes)) {
    params_.cache = gpu_.units(params_.cache.unit_floats);
    params_.counters = gpu_.counters<RoundCounters>();
    restart(lines);
  }

  [[nodiscard]] queue::MemoryKind memory() const override { return queue::MemoryKind::device; }
  [[nodiscard]] std::uintptr_t slot_address(std::uint64_t slot) const override { return gpu_.slot_address(slot); }
  RoundCounters run(RoundState& state) override {
    const RoundParams<Units> params = window_of(params_, state);
    return gpu_.launch_round<RoundCounters>(state, kernel_, params, params.line_count);
  }
  void loaded(const engine::Queue& queue, queue::FenceId fence) override { gpu_.loaded(queue, fence); }
  void collect(std::span<const std::uint32_t> from, std::vector<HalfLine>& lines, std::vector<TracedPoint>& points) override {
    device_.make_current();
    lines.resize(count_);
    stream_.synchronize();
    if (count_ > 0) gpu::copy_to_host(lines.data(), lines_.pointer(), lines.size() * sizeof(HalfLine));
    // The points the lines took, gathered on the GPU: a line's capacity is its longest (max_steps), most
    // lines end far short of it, and copying every slot took most of a trace's time.
    const std::vector<std::uint64_t> offsets = gathered_offsets(lines, from);
    const std::size_t at = points.size();
    if (offsets.back() == 0) return;
    points.resize(at + offsets.back());
    const std::vector<std::uint32_t> starts = starting_steps(from, count_);
    gpu::DeviceBuffer starts_on_device(starts.size() * sizeof(std::uint32_t)), offsets_on_device(offsets.size() * sizeof(std::uint64_t)),
        gathered(offsets.back() * sizeof(TracedPoint));
    const gpu::CudaDriver& cuda = gpu::require_driver();
    const gpu::CUstream stream = stream_.handle();
    gpu::check(cuda.cuMemcpyHtoDAsync(starts_on_device.pointer(), starts.data(), starts_on_device.size_bytes(), stream),
               "cuMemcpyHtoDAsync");
    gpu::check(cuda.cuMemcpyHtoDAsync(offsets_on_device.pointer(), offsets.data(), offsets_on_device.size_bytes(), stream),
               "cuMemcpyHtoDAsync");
    GatherParams gather{params_.points, params_.point_capacity, reinterpret_cast<const std::uint32_t*>(starts_on_device.pointer()),
                        reinterpret_cast<const std::uint64_t*>(offsets_on_device.pointer()), count_,
                        reinterpret_cast<TracedPoint*>(gathered.pointer())};
    std::uint64_t total = offsets.back();
    void* args[] = {&gather, &total};
    gpu::launch_1d(gather_, total, 256, stream, args);
    gpu::check(cuda.cuMemcpyDtoHAsync(points.data() + at, gathered.pointer(), gathered.size_bytes(), stream), "cuMemcpyDtoHAsync");
    stream_.synchronize();
  }
  // The points placed in the seeds' lines by the GPU: only the lines' own points come back (not collect's
  // gathered copy, then joined on the host, which took most of a trace's time).
  Polylines polylines(const std::vector<Vec3>& seeds, const TraceOptions& options, bool stopped) override {
    device_.make_current();
    std::vector<HalfLine> lines(count_);
    stream_.synchronize();
    if (count_ > 0) gpu::copy_to_host(lines.data(), lines_.pointer(), lines.size() * sizeof(HalfLine));
    if (stopped) end_stopped(lines);
    Polylines out;
    lines_points_ = {};
    const LineLayout layout = lay_out(seeds, options, lines, out);
    const std::uint64_t total = layout.offsets.back();
    if (total > 0) {
      const gpu::CudaDriver& cuda = gpu::require_driver();
      const gpu::CUstream stream = stream_.handle();
      gpu::DeviceBuffer offsets(layout.offsets.size() * sizeof(std::uint64_t)), first(layout.first.size() * sizeof(std::uint64_t)),
          reversed(layout.reversed.size()), points(out.points.size() * sizeof(Vec3)), times(out.times.size() * sizeof(float));
      gpu::check(cuda.cuMemcpyHtoDAsync(offsets.pointer(), layout.offsets.data(), offsets.size_bytes(), stream), "cuMemcpyHtoDAsync");
      gpu::check(cuda.cuMemcpyHtoDAsync(first.pointer(), layout.first.data(), first.size_bytes(), stream), "cuMemcpyHtoDAsync");
      gpu::check(cuda.cuMemcpyHtoDAsync(reversed.pointer(), layout.reversed.data(), reversed.size_bytes(), stream), "cuMemcpyHtoDAsync");
      PlaceParams place{params_.points, params_.point_capacity, reinterpret_cast<const std::uint64_t*>(offsets.pointer()), count_,
                        reinterpret_cast<const std::uint64_t*>(first.pointer()), reinterpret_cast<const std::uint8_t*>(reversed.pointer()),
                        reinterpret_cast<Vec3*>(points.pointer()), reinterpret_cast<float*>(times.pointer())};
      void* args[] = {&place, const_cast<std::uint64_t*>(&total)};
      gpu::launch_1d(place_, total, 256, stream, args);
      gpu::check(cuda.cuMemcpyDtoHAsync(out.points.data(), points.pointer(), points.size_bytes(), stream), "cuMemcpyDtoHAsync");
      gpu::check(cuda.cuMemcpyDtoHAsync(out.times.data(), times.pointer(), times.size_bytes(), stream), "cuMemcpyDtoHAsync");
      // The seeds in the points kept on the GPU for start_sampling_lines, as place_seeds puts them in the host's.
      gpu::DeviceBuffer seeds_on_device(seeds.size() * sizeof(Vec3)), seed_at(layout.seed_at.size() * sizeof(std::uint64_t));
      gpu::check(cuda.cuMemcpyHtoDAsync(seeds_on_device.pointer(), seeds.data(), seeds_on_device.size_bytes(), stream),
                 "cuMemcpyHtoDAsync");
      gpu::check(cuda.cuMemcpyHtoDAsync(seed_at.pointer(), layout.seed_at.data(), seed_at.size_bytes(), stream), "cuMemcpyHtoDAsync");
      const auto* seed_points = reinterpret_cast<const Vec3*>(seeds_on_device.pointer());
      const auto* seed_places = reinterpret_cast<const std::uint64_t*>(seed_at.pointer());
      std::uint64_t seed_count = seeds.size();
      auto* kept = reinterpret_cast<Vec3*>(points.pointer());
      void* seed_args[] = {&seed_points, &seed_places, &seed_count, &kept};
      gpu::launch_1d(place_seeds_, seed_count, 256, stream, seed_args);
      stream_.synchronize();
      lines_points_ = std::move(points);
    }
    lines_point_count_ = out.points.size();
    place_seeds(seeds, layout, out);
    return out;
  }
  bool start_sampling_lines() override {
    if (lines_points_.size_bytes() == 0 && lines_point_count_ > 0) return false;  // the seeds alone: none kept
    device_.make_current();
    sample_count_ = lines_point_count_;
    sample_points_ = std::move(lines_points_);
    if (sample_points_.size_bytes() == 0) sample_points_ = gpu::DeviceBuffer(sizeof(Vec3));  // no points: one slot, as start_sampling
    const std::uint64_t bytes = std::max<std::uint64_t>(sample_count_, 1) * sizeof(Vec3);
    velocities_ = gpu::DeviceBuffer(bytes);
    done_ = gpu::DeviceBuffer(std::max<std::uint64_t>(sample_count_, 1));
    gpu::check(gpu::require_driver().cuMemsetD8Async(done_.pointer(), 0, done_.size_bytes(), stream_.handle()), "cuMemsetD8Async");
    return true;
  }
  void start_sampling(const std::vector<Vec3>& points) override {
    device_.make_current();
    sample_count_ = points.size();
    const std::uint64_t bytes = std::max<std::uint64_t>(sample_count_, 1) * sizeof(Vec3);
    sample_points_ = gpu::DeviceBuffer(bytes);
    velocities_ = gpu::DeviceBuffer(bytes);
    done_ = gpu::DeviceBuffer(std::max<std::uint64_t>(sample_count_, 1));
    const gpu::CudaDriver& cuda = gpu::require_driver();
    if (sample_count_ > 0)
      gpu::check(cuda.cuMemcpyHtoDAsync(sample_points_.pointer(), points.data(), sample_count_ * sizeof(Vec3), stream_.handle()),
                 "cuMemcpyHtoDAsync");
    gpu::check(cuda.cuMemsetD8Async(done_.pointer(), 0, done_.size_bytes(), stream_.handle()), "cuMemsetD8Async");
  }
  SampleCounters sample_round(RoundState& state, std::uint64_t first, std::uint64_t window) override {
    SampleParams<Units> params = sample_params(params_, state, first, window);
    params.points = reinterpret_cast<const Vec3*>(sample_points_.pointer());
    params.velocities = reinterpret_cast<Vec3*>(velocities_.pointer());
    params.done = reinterpret_cast<std::uint8_t*>(done_.pointer());
    params.counters = gpu_.counters<SampleCounters>();
    return gpu_.launch_round<SampleCounters>(state, sample_, params, window);
  }
  std::vector<Vec3> sampled() override {
    std::vector<Vec3> velocities(sample_count_);
    stream_.synchronize();
    if (sample_count_ > 0) gpu::copy_to_host(velocities.data(), velocities_.pointer(), sample_count_ * sizeof(Vec3));
    sample_points_ = {}, velocities_ = {}, done_ = {};
    sample_count_ = 0;
    return velocities;
  }
  void restart(const std::vector<HalfLine>& lines) override {
    device_.make_current();
    count_ = lines.size();
    const std::uint64_t line_bytes = std::max<std::uint64_t>(count_, 1) * sizeof(HalfLine);
    if (lines_.size_bytes() < line_bytes) {  // grown only: a rank's lines come and go
      lines_ = gpu::DeviceBuffer(line_bytes);
      points_ = gpu::DeviceBuffer(std::max<std::uint64_t>(count_, 1) * params_.point_capacity * sizeof(TracedPoint));
      waits_for_ = gpu::DeviceBuffer(std::max<std::uint64_t>(count_, 1) * sizeof(std::uint64_t));
    }
    params_.lines = reinterpret_cast<HalfLine*>(lines_.pointer());
    params_.points = reinterpret_cast<TracedPoint*>(points_.pointer());
    params_.waits_for = reinterpret_cast<std::uint64_t*>(waits_for_.pointer());
    if (count_ > 0)
      gpu::check(gpu::require_driver().cuMemcpyHtoDAsync(lines_.pointer(), lines.data(), count_ * sizeof(HalfLine), stream_.handle()),
                 "cuMemcpyHtoDAsync");
    stream_.synchronize();
  }
  std::vector<std::uint64_t> waits_for() override {
    std::vector<std::uint64_t> out(count_);
    stream_.synchronize();
    if (count_ > 0) gpu::copy_to_host(out.data(), waits_for_.pointer(), count_ * sizeof(std::uint64_t));
    return out;
  }

 private:
  DeviceCache gpu_;
  gpu::Device& device_;
  gpu::Stream& stream_;
  gpu::CUfunction kernel_, gather_, place_, place_seeds_, sample_;
  RoundParams<Units> params_;
  gpu::DeviceBuffer lines_, points_, waits_for_;
  std::uint64_t count_ = 0;  // half-lines now
  gpu::DeviceBuffer lines_points_;  // the points polylines() placed, until sampling takes them
  std::uint64_t lines_point_count_ = 0;
  gpu::DeviceBuffer sample_points_, velocities_, done_;  // while sampling
  std::uint64_t sample_count_ = 0;
};

}  // namespace

template <typename Units>
std::unique_ptr<RoundRunner<Units>> make_device_rounds(int device, const Units& units, const TraceOptions& options,
                                                       std::uint64_t unit_bytes, std::uint64_t slots, std::uint64_t unit_count,
                                                       const std::vector<HalfLine>& lines) {
  return std::make_unique<DeviceRounds<Units>>(device, units, options, unit_bytes, slots, unit_count, lines);
}

template std::unique_ptr<RoundRunner<BlockLayout>> make_device_rounds<BlockLayout>(int, const BlockLayout&, const TraceOptions&, std::uint64_t, std::uint64_t, std::uint64_t, const std::vector<HalfLine>&);
template std::unique_ptr<RoundRunner<HilbertUnits>> make_device_rounds<HilbertUnits>(int, const HilbertUnits&, const TraceOptions&, std::uint64_t, std::uint64_t, std::uint64_t, const std::vector<HalfLine>&);

}  // namespace headrace::workloads::streamlines::resident
