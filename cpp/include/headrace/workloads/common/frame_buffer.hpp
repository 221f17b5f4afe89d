// A GPU renderer's frame buffer (its image, depth keys or sort-last layer in GPU memory) read back to the
// host once the work drawing it has finished.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "headrace/gpu/cuda_driver.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/stream.hpp"

namespace headrace::workloads::common {

// Host memory for the frames a series hands on (to image writers that hold each for a while), given back
// for the next frame once its last holder lets go. A frame read into new memory faulted in and zeroed 3 MB
// of pages while the writers' threads faulted theirs: the read-back took 2.2 ms beside them against
// 0.5 ms alone (docs/results.md). Buffers made ahead by reserve() have their pages in place.
class FramePool {
 public:
  // Values of a frame: `bytes` bytes at `data`, owned with everything else that holds them.
  using Buffer = std::shared_ptr<std::byte>;

  // keep: how many free buffers wait for the next frame at most (more go back to the system).
  explicit FramePool(std::size_t keep = 32) : shelf_(std::make_shared<Shelf>()) { shelf_->keep = keep; }

  // A buffer of at least `bytes` (a free one, else a new one); back on the shelf when its last holder lets go.
  [[nodiscard]] Buffer take(std::size_t bytes) {
    std::unique_ptr<Memory> memory;
    {
      std::lock_guard lock(shelf_->mutex);
      auto& free = shelf_->free;
      for (auto it = free.begin(); it != free.end(); ++it)
        if ((*it)->size() >= bytes) {
          memory = std::move(*it);
          free.erase(it);
          break;
        }
    }
    if (!memory) memory = std::make_unique<Memory>(bytes);  // zeroed: its pages are in place once made
    std::byte* data = memory->data();
    return Buffer(data, [shelf = std::weak_ptr<Shelf>(shelf_), memory = memory.release()](std::byte*) {
      std::unique_ptr<Memory> owned(memory);
      if (const auto kept = shelf.lock()) kept->put(std::move(owned));
    });
  }

  // Makes `count` buffers of `bytes` ahead (their pages faulted in now, not inside a frame), up to the shelf's keep.
  void reserve(std::size_t bytes, std::size_t count) {
    std::vector<Buffer> made;
    for (std::size_t i = 0; i < count; ++i) made.push_back(take(bytes));
  }  // each goes on the shelf as `made` lets go

  [[nodiscard]] std::size_t free_buffers() const {
    std::lock_guard lock(shelf_->mutex);
    return shelf_->free.size();
  }

 private:
  using Memory = std::vector<std::byte>;
  struct Shelf {
    mutable std::mutex mutex;
    std::vector<std::unique_ptr<Memory>> free;
    std::size_t keep = 0;
    void put(std::unique_ptr<Memory> memory) {
      std::lock_guard lock(mutex);
      if (free.size() < keep) free.push_back(std::move(memory));
    }
  };
  std::shared_ptr<Shelf> shelf_;  // the buffers' deleters hold it weakly: a buffer may outlive the pool
};

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
    std::vector<T> values(count);
    read_into(device, buffer, values.data(), count * sizeof(T), stream);
    return values;
  }

  // read() into a buffer of the pool (see FramePool): what a series hands to its image writers.
  template <typename T>
  [[nodiscard]] FramePool::Buffer read_pooled(const gpu::Device& device, const gpu::DeviceBuffer& buffer, std::size_t count,
                                              gpu::CUstream stream) {
    FramePool::Buffer values = pool_.take(count * sizeof(T));
    read_into(device, buffer, values.get(), count * sizeof(T), stream);
    return values;
  }
  // `count` buffers of `count_values` values of T made ahead for read_pooled (a series' image writers' worth).
  template <typename T>
  void reserve(std::size_t count_values, std::size_t count) {
    pool_.reserve(count_values * sizeof(T), count);
  }

 private:
  void read_into(const gpu::Device& device, const gpu::DeviceBuffer& buffer, void* host, std::size_t size_bytes,
                 gpu::CUstream stream) {
    std::lock_guard lock(mutex_);
    device.make_current();
    const auto& driver = gpu::require_driver();
    gpu::check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize");
    if (size_bytes == 0) return;
    if (!copies_) copies_.emplace();
    if (pinned_.size_bytes() < size_bytes) pinned_ = gpu::PinnedBuffer(size_bytes);
    gpu::check(driver.cuMemcpyDtoHAsync(pinned_.data(), buffer.pointer(), size_bytes, copies_->handle()),
               "cuMemcpyDtoHAsync");
    copies_->synchronize();
    std::memcpy(host, pinned_.data(), size_bytes);
  }

  std::mutex mutex_;
  std::optional<gpu::Stream> copies_;  // made on first use, in the device's context
  gpu::PinnedBuffer pinned_;
  FramePool pool_;
};

}  // namespace headrace::workloads::common
