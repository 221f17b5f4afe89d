// A GPU renderer's frame buffer (its image, depth keys or sort-last layer in GPU memory) read back to the
// host once the work drawing it has finished.
#pragma once

#include <cstddef>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "headrace/gpu/cuda_driver.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/stream.hpp"

namespace headrace::workloads::common {

// Reads frame buffers back through page-locked memory on a stream of its own, kept for the next read:
// the copy waits for the drawing stream named and nothing else. A pageable cuMemcpyDtoH goes through the
// driver's staging on the legacy stream, and a series' next frame is loading on other streams meanwhile.
// Reads from several threads take turns (the bindings let go of the interpreter's lock while one waits).
class FrameReadBack {
 public:
  // Waits for `stream`, then copies the first `count` values of T from `buffer` on `device`'s GPU.
  template <typename T>
  [[nodiscard]] std::vector<T> read(const gpu::Device& device, const gpu::DeviceBuffer& buffer, std::size_t count,
                                    gpu::CUstream stream) {
    std::lock_guard lock(mutex_);
    device.make_current();
    const auto& driver = gpu::require_driver();
    gpu::check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize");
    std::vector<T> values(count);
    const std::size_t size_bytes = count * sizeof(T);
    if (size_bytes == 0) return values;
    if (!copies_) copies_.emplace();
    if (pinned_.size_bytes() < size_bytes) pinned_ = gpu::PinnedBuffer(size_bytes);
    gpu::check(driver.cuMemcpyDtoHAsync(pinned_.data(), buffer.pointer(), size_bytes, copies_->handle()),
               "cuMemcpyDtoHAsync");
    copies_->synchronize();
    std::memcpy(values.data(), pinned_.data(), size_bytes);
    return values;
  }

 private:
  std::mutex mutex_;
  std::optional<gpu::Stream> copies_;  // made on first use, in the device's context
  gpu::PinnedBuffer pinned_;
};

}  // namespace headrace::workloads::common
