// The kernel-managed strategy of seed 002 (section 3.2.2): the container mapped with mmap, the page
// cache deciding what stays, every access a load (one page moved at a time). madvise(MADV_DONTNEED)
// over the mapping every `madvise_interval_s` (the paper's 4 s) drops this process's page references
// so the kernel can evict cleanly; a memory budget, checked with mincore every 50 ms, drops the file's
// pages from the page cache too (posix_fadvise DONTNEED) once more than the budget is resident, so the
// run stays truly out of core on a machine with plenty of RAM. A unit source for unit_sampler.hpp.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "headrace/detail/file_descriptor.hpp"
#include "headrace/detail/memory_mapping.hpp"

namespace headrace::workloads::streamlines {

struct MappedUnitsOptions {
  double madvise_interval_s = 4.0;        // 0: never
  std::uint64_t memory_budget_bytes = 0;  // 0: no budget
};

struct MappedUnitsStats {
  std::uint64_t madvise_calls = 0;
  std::uint64_t budget_drops = 0;         // times the resident pages passed the budget and were dropped
  std::uint64_t max_resident_bytes = 0;   // the most seen resident at a check (with a budget)
};

class MappedUnits {
 public:
  // Units of unit_bytes at the given file offsets (native blocks), or, with `offsets` empty, units one
  // after another from `start` (a contiguous Hilbert field). Throws SystemError for open and mmap.
  MappedUnits(const std::string& path, std::uint64_t unit_bytes, std::vector<std::uint64_t> offsets, std::uint64_t start,
              MappedUnitsOptions options);
  ~MappedUnits();
  MappedUnits(const MappedUnits&) = delete;
  MappedUnits& operator=(const MappedUnits&) = delete;

  struct Handle {
    const std::byte* pointer = nullptr;
    std::uint64_t unit_index = 0;
    [[nodiscard]] bool valid() const noexcept { return pointer != nullptr; }
    [[nodiscard]] std::uint64_t unit() const noexcept { return unit_index; }
    [[nodiscard]] const std::byte* data() const noexcept { return pointer; }
    void release() noexcept { pointer = nullptr; }
  };
  [[nodiscard]] Handle acquire(std::uint64_t unit) const {
    return {mapping_.data() + (offsets_.empty() ? start_ + unit * unit_bytes_ : offsets_[unit]), unit};
  }
  [[nodiscard]] std::uint64_t unit_bytes() const noexcept { return unit_bytes_; }
  [[nodiscard]] MappedUnitsStats stats() const;
  // How many bytes of the mapping are resident now (mincore).
  [[nodiscard]] std::uint64_t resident_bytes() const;

 private:
  void watch();

  headrace::detail::FileDescriptor fd_;
  headrace::detail::MemoryMapping mapping_;
  std::uint64_t unit_bytes_;
  std::vector<std::uint64_t> offsets_;
  std::uint64_t start_;
  MappedUnitsOptions options_;
  std::atomic<std::uint64_t> madvise_calls_{0}, budget_drops_{0}, max_resident_{0};
  std::mutex mutex_;
  std::condition_variable stop_changed_;
  bool stopping_ = false;
  std::thread watcher_;  // last: started once everything it reads exists
};

}  // namespace headrace::workloads::streamlines
