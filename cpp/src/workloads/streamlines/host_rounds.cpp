// The reference runner of the GPU tracer's rounds: the same rounds on CPU threads over host memory.
#include <algorithm>
#include <memory>

#include "headrace/detail/aligned_buffer.hpp"
#include "headrace/detail/parallel_for.hpp"
#include "headrace/workloads/streamlines/unit_layouts.hpp"
#include "round_runner.hpp"

namespace headrace::workloads::streamlines::resident {

namespace {

template <typename Units>
class HostRounds final : public RoundRunner<Units> {
 public:
  HostRounds(const Units& units, const TraceOptions& options, std::uint64_t unit_bytes, std::uint64_t slots,
             std::vector<HalfLine> lines, unsigned threads)
      : params_(round_params(units, options, unit_bytes)),
        unit_bytes_(unit_bytes),
        pool_(slots * unit_bytes),
        lines_(std::move(lines)),
        points_(lines_.size() * options.max_steps),
        waits_for_(lines_.size()),
        threads_(threads) {}

  [[nodiscard]] queue::MemoryKind memory() const override { return queue::MemoryKind::host; }
  [[nodiscard]] std::uintptr_t slot_address(std::uint64_t slot) const override {
    return reinterpret_cast<std::uintptr_t>(pool_.data() + slot * unit_bytes_);
  }
  RoundCounters run(RoundState& state) override {
    RoundCounters counters;
    RoundParams<Units> params = window_of(params_, state);
    params.cache = round_cache(params.cache, state);
    params.lines = lines_.data();
    params.points = points_.data();
    params.waits_for = waits_for_.data();
    params.counters = &counters;
    headrace::detail::parallel_for(params.line_count, threads_, [&](std::uint64_t k) { advance_resident_line(params, k); });
    return counters;
  }
  void loaded(const engine::Queue&, queue::FenceId) override {}  // the queue's wait saw the bytes land
  void collect(std::span<const std::uint32_t> from, std::vector<HalfLine>& lines, std::vector<TracedPoint>& points) override {
    const std::vector<std::uint64_t> offsets = gathered_offsets(lines_, from);
    const std::vector<std::uint32_t> starts = starting_steps(from, lines_.size());
    const std::size_t at = points.size();
    points.resize(at + offsets.back());
    const GatherParams gather{points_.data(), params_.point_capacity, starts.data(), offsets.data(), lines_.size(), points.data() + at};
    headrace::detail::parallel_for(offsets.back(), threads_, [&](std::uint64_t k) { gather_point(gather, k); });
    lines = std::move(lines_);
  }
  void start_sampling(const std::vector<Vec3>& points) override {
    sample_points_ = &points;
    velocities_.assign(points.size(), Vec3{});
    done_.assign(points.size(), 0);
  }
  SampleCounters sample_round(RoundState& state, std::uint64_t first, std::uint64_t window) override {
    SampleCounters counters;
    SampleParams<Units> params = sample_params(params_, state, first, window);
    params.cache = round_cache(params.cache, state);
    params.points = sample_points_->data();
    params.velocities = velocities_.data();
    params.done = done_.data();
    params.counters = &counters;
    headrace::detail::parallel_for(params.count, threads_, [&](std::uint64_t k) { sample_resident_point(params, k); });
    return counters;
  }
  std::vector<Vec3> sampled() override {
    sample_points_ = nullptr;
    done_ = {};
    return std::move(velocities_);
  }
  void restart(const std::vector<HalfLine>& lines) override {
    lines_ = lines;
    points_.resize(lines_.size() * params_.point_capacity);
    waits_for_.resize(lines_.size());
  }
  std::vector<std::uint64_t> waits_for() override { return waits_for_; }

 private:
  // The cache as a round over host memory sees it: the state's table and counts (no unit wanted yet).
  ResidentUnits round_cache(ResidentUnits cache, RoundState& state) const {
    std::fill(state.wanted.begin(), state.wanted.end(), 0u);
    cache.slot_of_unit = state.slot_of_unit.data();
    cache.pool = reinterpret_cast<const float*>(pool_.data());
    cache.wanted = state.wanted.data();
    cache.last_used = state.last_used.data();
    return cache;
  }

  RoundParams<Units> params_;
  std::uint64_t unit_bytes_;
  headrace::detail::AlignedBuffer pool_;
  std::vector<HalfLine> lines_;
  std::vector<TracedPoint> points_;
  std::vector<std::uint64_t> waits_for_;
  unsigned threads_;
  const std::vector<Vec3>* sample_points_ = nullptr;  // while sampling
  std::vector<Vec3> velocities_;
  std::vector<std::uint8_t> done_;
};

}  // namespace

template <typename Units>
std::unique_ptr<RoundRunner<Units>> make_host_rounds(const Units& units, const TraceOptions& options, std::uint64_t unit_bytes,
                                                     std::uint64_t slots, std::vector<HalfLine> lines, unsigned threads) {
  return std::make_unique<HostRounds<Units>>(units, options, unit_bytes, slots, std::move(lines), threads);
}

template std::unique_ptr<RoundRunner<BlockLayout>> make_host_rounds<BlockLayout>(const BlockLayout&, const TraceOptions&, std::uint64_t, std::uint64_t, std::vector<HalfLine>, unsigned);
template std::unique_ptr<RoundRunner<HilbertUnits>> make_host_rounds<HilbertUnits>(const HilbertUnits&, const TraceOptions&, std::uint64_t, std::uint64_t, std::vector<HalfLine>, unsigned);

}  // namespace headrace::workloads::streamlines::resident
