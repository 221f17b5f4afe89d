// Move-only owners of GPU memory and of pinned (page-locked) host memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headrace/gpu/cuda_driver.hpp"

namespace headrace::gpu {

class DeviceBuffer {
 public:
  DeviceBuffer() noexcept = default;
  // Throws GpuOutOfMemoryError naming the size asked for and the memory free.
  explicit DeviceBuffer(std::size_t size_bytes);
  ~DeviceBuffer() noexcept;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  [[nodiscard]] CUdeviceptr pointer() const noexcept { return pointer_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_bytes_; }

 private:
  CUdeviceptr pointer_ = 0;
  std::size_t size_bytes_ = 0;
};

class PinnedBuffer {
 public:
  PinnedBuffer() noexcept = default;
  explicit PinnedBuffer(std::size_t size_bytes);
  ~PinnedBuffer() noexcept;
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_bytes_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_bytes_ = 0;
};

// Copies device memory to host memory, synchronously (tests and checks).
void copy_to_host(void* destination, CUdeviceptr source, std::size_t size_bytes);

}  // namespace headrace::gpu
