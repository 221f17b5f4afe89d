// The pinned host-to-device copy rate of a GPU: the ceiling a stream from the page cache is held to
// (headrace view's panel, the benchmarks' hot yardstick).
#pragma once

#include <cstddef>

#include "headrace/gpu/device.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/stream.hpp"

namespace headrace::gpu {

// Back-to-back pinned host-to-device copies on one GPU, timed by the wall clock: what several GPUs copying
// at once reach together (the host's ceiling for N GPUs: `headrace bench scaling` starts one a rank,
// together). The buffers are made and touched up front.
class PinnedCopies {
 public:
  PinnedCopies(int device, std::size_t size_bytes);
  // Seconds for `copies` copies of size_bytes, issued on one stream and waited for.
  [[nodiscard]] double run(unsigned copies) const;
  // Bytes per second of the fastest of `repeats` copies timed by CUDA events (one copy first, untimed).
  [[nodiscard]] double fastest_rate(unsigned repeats) const;

 private:
  void issue() const;

  Device device_;
  PinnedBuffer host_;
  DeviceBuffer target_;
  Stream stream_;
};

// Bytes per second of the fastest of `repeats` asynchronous copies of `size_bytes` from page-locked
// host memory into device memory on GPU `device`, timed by CUDA events (one copy first, untimed).
[[nodiscard]] double pinned_copy_rate(int device, std::size_t size_bytes, unsigned repeats);

}  // namespace headrace::gpu
