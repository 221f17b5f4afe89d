// A GPU renderer's frame buffer (its image, depth keys or sort-last layer in GPU memory) read back to the
// host once the work drawing it has finished.
#pragma once

#include <cstddef>
#include <vector>

#include "headrace/gpu/cuda_driver.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/memory.hpp"

namespace headrace::workloads::common {

// Waits for `stream`, then copies the first `count` values of T from `buffer` on `device`'s GPU.
template <typename T>
[[nodiscard]] std::vector<T> read_back(const gpu::Device& device, const gpu::DeviceBuffer& buffer, std::size_t count,
                                       gpu::CUstream stream) {
  device.make_current();
  gpu::check(gpu::require_driver().cuStreamSynchronize(stream), "cuStreamSynchronize");
  std::vector<T> values(count);
  if (!values.empty()) gpu::copy_to_host(values.data(), buffer.pointer(), values.size() * sizeof(T));
  return values;
}

}  // namespace headrace::workloads::common
