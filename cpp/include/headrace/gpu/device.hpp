// A GPU: its primary context (the one the CUDA runtime, CuPy and PyTorch use) retained for our
// lifetime and made current on the threads that call into the driver.
#pragma once

#include "headrace/gpu/cuda_driver.hpp"

namespace headrace::gpu {

class Device {
 public:
  // Throws UnavailableError without a driver, UsageError for an ordinal out of range.
  explicit Device(int ordinal);
  ~Device() noexcept;
  Device(Device&& other) noexcept;
  Device& operator=(Device&&) = delete;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  [[nodiscard]] int ordinal() const noexcept { return ordinal_; }
  [[nodiscard]] CUcontext context() const noexcept { return context_; }
  // Makes the primary context current on the calling thread.
  void make_current() const;

 private:
  int ordinal_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
};

}  // namespace headrace::gpu
