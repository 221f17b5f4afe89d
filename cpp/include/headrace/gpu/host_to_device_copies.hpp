// Host-to-device copies gathered, then issued on a stream with neighbours merged: a copy whose source
// and destination both continue the previous one's extends it. Small chunks staged one after another
// (64 KiB gdeflate chunks) then cost one copy call per run, not one each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "headrace/gpu/cuda_driver.hpp"

namespace headrace::gpu {

class HostToDeviceCopies {
 public:
  struct Copy {
    CUdeviceptr destination = 0;
    const std::byte* source = nullptr;
    std::uint64_t size = 0;
  };

  void add(CUdeviceptr destination, const std::byte* source, std::uint64_t size);
  // One cuMemcpyHtoDAsync per merged run, in the order added; throws CudaError.
  void issue(CUstream stream) const;
  [[nodiscard]] const std::vector<Copy>& runs() const noexcept { return runs_; }

 private:
  std::vector<Copy> runs_;
};

}  // namespace headrace::gpu
