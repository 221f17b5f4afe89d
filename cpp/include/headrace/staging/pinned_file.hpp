// A whole file mapped read-only and page-locked for the GPU: H2D copies then read its page-cache pages
// by DMA, with no CPU copy into staging (the hot path; the pinned H2D rate is the ceiling).
// Page-locking faults every page in, so adding a cold file reads it whole, and the pages stay in RAM
// until the mapping is dropped: for data sets that fit in memory and are read again and again.
#pragma once

#include <string>

#include "headrace/detail/file_descriptor.hpp"
#include "headrace/detail/memory_mapping.hpp"
#include "headrace/gpu/cuda_driver.hpp"

namespace headrace::staging {

class PinnedFile {
 public:
  // Throws SystemError (open, mmap) or CudaError naming cuMemHostRegister and the path when the
  // driver refuses to lock file pages (some kernels and file systems do).
  explicit PinnedFile(const std::string& path);
  ~PinnedFile() noexcept;
  PinnedFile(const PinnedFile&) = delete;
  PinnedFile& operator=(const PinnedFile&) = delete;

  [[nodiscard]] const std::byte* data() const noexcept { return mapping_.data(); }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return mapping_.size_bytes(); }
  // Seconds cuMemHostRegister took (it pins every page: the cost of adding the file).
  [[nodiscard]] double register_seconds() const noexcept { return register_seconds_; }

 private:
  detail::FileDescriptor fd_;
  detail::MemoryMapping mapping_;
  bool registered_ = false;
  double register_seconds_ = 0;
};

}  // namespace headrace::staging
