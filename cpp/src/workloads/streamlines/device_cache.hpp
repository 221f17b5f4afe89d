// The resident cache in GPU memory (private to the GPU runners of streamlines and pathlines): the pool of
// slots, the unit table and counters a round reads and fills, the kernels of resident_rounds.cu, and one
// stream everything runs on.
#pragma once

#include <cstdint>

#include "headrace/engine/queue.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/kernel_module.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/stream.hpp"
#include "headrace/workloads/streamlines/resident_lines.hpp"
#include "resident_kernel_image.hpp"
#include "round_runner.hpp"

namespace headrace::workloads::streamlines::resident {

class DeviceCache {
 public:
  // Counters of a round (RoundCounters, PathCounters, SampleCounters) fit in this many bytes.
  static constexpr std::uint64_t counter_bytes = 32;

  DeviceCache(int ordinal, std::uint64_t unit_bytes, std::uint64_t slots, std::uint64_t unit_count)
      : device(ordinal),
        module((device.make_current(), resident_kernel_image()), "the GPU tracer's kernels (resident_rounds.cu)",
               "trace on the CPU instead"),
        unit_bytes_(unit_bytes),
        pool_(slots * unit_bytes),
        table_(unit_count * sizeof(std::int32_t)),
        wanted_(unit_count * sizeof(std::uint32_t)),
        last_used_(unit_count * sizeof(std::uint32_t)),
        counters_(counter_bytes) {
    gpu::check(gpu::require_driver().cuMemsetD8Async(last_used_.pointer(), 0, last_used_.size_bytes(), stream.handle()),
               "cuMemsetD8Async");
  }

  // The cache's device pointers as a round reads them (its round number set by each launch's caller).
  [[nodiscard]] ResidentUnits units(std::uint64_t unit_floats) const {
    ResidentUnits cache;
    cache.slot_of_unit = reinterpret_cast<const std::int32_t*>(table_.pointer());
    cache.pool = reinterpret_cast<const float*>(pool_.pointer());
    cache.unit_floats = unit_floats;
    cache.wanted = reinterpret_cast<std::uint32_t*>(wanted_.pointer());
    cache.last_used = reinterpret_cast<std::uint32_t*>(last_used_.pointer());
    return cache;
  }
  template <typename Counters>
  [[nodiscard]] Counters* counters() const {
    static_assert(sizeof(Counters) <= counter_bytes);
    return reinterpret_cast<Counters*>(counters_.pointer());
  }
  [[nodiscard]] std::uintptr_t slot_address(std::uint64_t slot) const { return pool_.pointer() + slot * unit_bytes_; }
  void loaded(const engine::Queue& queue, queue::FenceId fence) const {
    queue.wait_on_stream(fence, reinterpret_cast<std::uintptr_t>(stream.handle()));
  }

  // A round of `kernel` on `threads` threads, its one argument `params`: the slot table in; the wanted
  // units, the units' last use and the round's counters (a Counters at counters<Counters>()) out.
  template <typename Counters, typename Params>
  Counters launch_round(RoundState& state, gpu::CUfunction kernel, Params params, std::uint64_t threads) {
    const gpu::CudaDriver& cuda = gpu::require_driver();
    const gpu::CUstream s = stream.handle();
    device.make_current();
    gpu::check(cuda.cuMemcpyHtoDAsync(table_.pointer(), state.slot_of_unit.data(), table_.size_bytes(), s), "cuMemcpyHtoDAsync");
    gpu::check(cuda.cuMemsetD8Async(wanted_.pointer(), 0, wanted_.size_bytes(), s), "cuMemsetD8Async");
    gpu::check(cuda.cuMemsetD8Async(counters_.pointer(), 0, counters_.size_bytes(), s), "cuMemsetD8Async");
    void* args[] = {&params};
    if (threads > 0) gpu::launch_1d(kernel, threads, 128, s, args);
    Counters counters;
    gpu::check(cuda.cuMemcpyDtoHAsync(state.wanted.data(), wanted_.pointer(), wanted_.size_bytes(), s), "cuMemcpyDtoHAsync");
    gpu::check(cuda.cuMemcpyDtoHAsync(state.last_used.data(), last_used_.pointer(), last_used_.size_bytes(), s),
               "cuMemcpyDtoHAsync");
    gpu::check(cuda.cuMemcpyDtoHAsync(&counters, counters_.pointer(), sizeof counters, s), "cuMemcpyDtoHAsync");
    stream.synchronize();
    return counters;
  }

  gpu::Device device;
  gpu::KernelModule module;
  gpu::Stream stream;

 private:
  std::uint64_t unit_bytes_;
  gpu::DeviceBuffer pool_, table_, wanted_, last_used_, counters_;
};

}  // namespace headrace::workloads::streamlines::resident
