// The pinned host-to-device copy rate of a GPU: the ceiling a stream from the page cache is held to
// (headrace view's panel, the benchmarks' hot yardstick).
#pragma once

#include <cstddef>

namespace headrace::gpu {

// Bytes per second of the fastest of `repeats` asynchronous copies of `size_bytes` from page-locked
// host memory into device memory on GPU `device`, timed by CUDA events (one copy first, untimed).
[[nodiscard]] double pinned_copy_rate(int device, std::size_t size_bytes, unsigned repeats);

}  // namespace headrace::gpu
