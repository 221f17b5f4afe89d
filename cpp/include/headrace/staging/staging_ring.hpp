// Staging memory between the disk and its destination: one buffer (pinned when a GPU is used, so
// H2D copies run at full speed and asynchronously) handed out as a ring of variable-size regions.
// A region is released only when the copy or kernel that reads it has finished (seed 000, figure 1:
// no segment is overwritten while the GPU still reads it); regions are reused in ring order.
// The memory is allocated by the first acquire (page-locking 256 MiB takes a third of a second): a
// queue whose reads never stage (DMA from page-locked files) never pays for it. Pinned memory needs
// the GPU's context current on the thread that acquires first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

#include "headrace/detail/aligned_buffer.hpp"
#include "headrace/gpu/memory.hpp"

namespace headrace::staging {

struct Region {
  std::uint64_t offset = 0;
  std::uint64_t size_bytes = 0;
  std::byte* data = nullptr;
};

class StagingRing {
 public:
  // pinned: page-locked through the CUDA driver (needs a GPU), in transparent huge pages when
  // huge_pages and the kernel gives them (gpu::PinnedBuffer); else 4096-aligned host memory.
  StagingRing(std::uint64_t capacity_bytes, bool pinned, bool huge_pages = false);
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;

  // A region of size_bytes (rounded up to 4096), or nullopt when there is no room now: the owner
  // waits for its releases (the engine's dispatcher goes on with another lane meanwhile). Throws
  // UsageError for a size larger than the ring.
  [[nodiscard]] std::optional<Region> try_acquire(std::uint64_t size_bytes);
  // Returns a region (any order; space is reused once every older region is back).
  void release(const Region& region);

  [[nodiscard]] std::uint64_t capacity_bytes() const noexcept { return capacity_; }
  [[nodiscard]] bool pinned() const noexcept { return pinned_; }
  // "pageable", or how the pinned memory was made ("pinned, huge pages", "pinned, cuMemHostAlloc
  // (no huge pages: why)"; before the first acquire, what will be tried).
  [[nodiscard]] std::string memory_description() const;
  [[nodiscard]] std::uint64_t in_use_bytes() const;
  // capacity_bytes() once the first acquire allocated the memory, 0 before.
  [[nodiscard]] std::uint64_t allocated_bytes() const;

 private:
  struct Allocation {
    std::uint64_t offset;
    std::uint64_t size;  // including any skipped tail before a wrap
    bool released;
  };
  std::optional<Region> allocate_locked(std::uint64_t size);
  void allocate_memory_locked();

  std::uint64_t capacity_;
  bool pinned_, huge_pages_;
  gpu::PinnedBuffer pinned_memory_;
  detail::AlignedBuffer host_memory_;
  std::byte* base_ = nullptr;

  mutable std::mutex mutex_;
  std::deque<Allocation> allocations_;  // oldest first
  std::uint64_t head_ = 0;              // next free offset
  std::uint64_t used_ = 0;              // bytes held by allocations_ (skipped tails included)
};

}  // namespace headrace::staging
