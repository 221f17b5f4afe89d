// Host-to-device copies gathered, then issued on a stream with neighbours merged:
// - a copy whose source and destination both continue the previous one's extends it (small chunks
//   staged one after another, 64 KiB gdeflate chunks, cost one copy call per run, not one each);
// - copies of one size at a constant stride on each side become the rows of one 2D copy. A file's
//   chunks are padded to whole pages while a segment holds them back to back, so a batch of 128 KB
//   chunks is a grid of rows: one call, not one per chunk (a copy call costs about what 128 KB takes
//   to cross PCIe, so one by one they ran at half the link's rate).
// A merged copy never spans two host buffers or two device allocations: CUDA refuses a 2D copy whose
// rows lie in different cuMemAlloc allocations (CUDA_ERROR_INVALID_VALUE, seen with frames in slots
// of their own).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "headrace/gpu/cuda_driver.hpp"

namespace headrace::staging {

class HostToDeviceCopies {
 public:
  // `rows` copies of `size` bytes, row r from source + r * source_pitch to destination + r * destination_pitch.
  struct Copy {
    gpu::CUdeviceptr destination = 0;
    const std::byte* source = nullptr;
    std::uint64_t size = 0;
    std::uint64_t rows = 1;
    std::uint64_t source_pitch = 0, destination_pitch = 0;  // rows > 1 only
    const std::byte* source_end = nullptr;  // the end of the host buffer the source lies in
    gpu::CUdeviceptr destination_end = 0;        // the end of the destination's allocation; 0: not asked yet
  };
  // The end of the device allocation holding an address (by default cuMemGetAddressRange).
  using AllocationEnd = std::function<gpu::CUdeviceptr(gpu::CUdeviceptr)>;

  HostToDeviceCopies();
  explicit HostToDeviceCopies(AllocationEnd allocation_end);

  // source lies in a host buffer ending at source_end (staging, a page-locked file).
  void add(gpu::CUdeviceptr destination, const std::byte* source, std::uint64_t size, const std::byte* source_end);
  // One cuMemcpyHtoDAsync per run of one row, one cuMemcpy2DAsync per run of rows, in the order added;
  // throws CudaError.
  void issue(gpu::CUstream stream) const;
  [[nodiscard]] const std::vector<Copy>& runs() const noexcept { return runs_; }

 private:
  // Whether destination .. destination + size lies in the allocation `run` starts in.
  bool same_allocation(Copy& run, gpu::CUdeviceptr destination, std::uint64_t size);

  AllocationEnd allocation_end_;
  std::vector<Copy> runs_;
};

}  // namespace headrace::staging
