// Move-only owners of GPU memory and of pinned (page-locked) host memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "headrace/detail/huge_pages.hpp"
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
  // cuMemHostAlloc.
  explicit PinnedBuffer(std::size_t size_bytes);
  // Transparent huge pages page-locked by the driver (detail/huge_pages.hpp: made several times faster,
  // read into as fast), else cuMemHostAlloc; how() says which, and why.
  [[nodiscard]] static PinnedBuffer of_huge_pages_if_possible(std::size_t size_bytes);
  ~PinnedBuffer() noexcept;
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_bytes_; }
  // "huge pages" or "cuMemHostAlloc" (with why not huge pages, when they were asked for).
  [[nodiscard]] const std::string& how() const noexcept { return how_; }

 private:
  void free() noexcept;
  std::byte* data_ = nullptr;
  std::size_t size_bytes_ = 0;
  detail::HugePageMemory huge_pages_;  // registered with the driver; empty for cuMemHostAlloc's memory
  std::string how_ = "cuMemHostAlloc";
};

// Copies device memory to host memory, synchronously (tests and checks).
void copy_to_host(void* destination, CUdeviceptr source, std::size_t size_bytes);
// Device memory brought home into host memory not touched yet (a detail::HostArray just sized) at the link's
// rate: each piece's DMA lands in a ring of page-locked staging (huge pages) while CPU threads copy the piece
// before it into place, so the destination is neither page-locked (which costs fresh memory as much as the
// copy) nor faulted in one page at a time by the driver's staged copy. One per result; copy() synchronous.
class HomeCopy {
 public:
  // `pieces` buffers of piece_bytes; `threads` CPU threads put the pieces in place (0: one per core).
  explicit HomeCopy(std::size_t piece_bytes = std::size_t{32} << 20, unsigned pieces = 4, unsigned threads = 0);
  ~HomeCopy() noexcept;
  HomeCopy(const HomeCopy&) = delete;
  HomeCopy& operator=(const HomeCopy&) = delete;

  // size_bytes from `source` into `destination`, after what `stream` has queued.
  void copy(void* destination, CUdeviceptr source, std::size_t size_bytes, CUstream stream);

 private:
  struct Ring;
  std::unique_ptr<Ring> ring_;
};

// Copies host memory to device memory, synchronously (small tables).
void copy_to_device(CUdeviceptr destination, const void* source, std::size_t size_bytes);

}  // namespace headrace::gpu
