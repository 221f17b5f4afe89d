// Host-to-device copies gathered, then issued on a stream with neighbours merged:
// - a copy whose source and destination both continue the previous one's extends it (small chunks
//   staged one after another, 64 KiB gdeflate chunks, cost one copy call per run, not one each);
// - copies of one size at a constant stride on each side become the rows of one 2D copy. A file's
//   chunks are padded to whole pages while a segment holds them back to back, so a batch of 128 KB
//   chunks is a grid of rows: one call, not one per chunk (a copy call costs about what 128 KB takes
//   to cross PCIe, so one by one they ran at half the link's rate).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "headrace/gpu/cuda_driver.hpp"

namespace headrace::gpu {

class HostToDeviceCopies {
 public:
  // `rows` copies of `size` bytes, row r from source + r * source_pitch to destination + r * destination_pitch.
  struct Copy {
    CUdeviceptr destination = 0;
    const std::byte* source = nullptr;
    std::uint64_t size = 0;
    std::uint64_t rows = 1;
    std::uint64_t source_pitch = 0, destination_pitch = 0;  // rows > 1 only
  };

  void add(CUdeviceptr destination, const std::byte* source, std::uint64_t size);
  // One cuMemcpyHtoDAsync per run of one row, one cuMemcpy2DAsync per run of rows, in the order added;
  // throws CudaError.
  void issue(CUstream stream) const;
  [[nodiscard]] const std::vector<Copy>& runs() const noexcept { return runs_; }

 private:
  std::vector<Copy> runs_;
};

}  // namespace headrace::gpu
