#include "headrace/staging/staging_ring.hpp"

#include "headrace/error.hpp"
#include "headrace/format/layout.hpp"

namespace headrace::staging {

StagingRing::StagingRing(std::uint64_t capacity_bytes, bool pinned, bool huge_pages)
    : capacity_(format::layout::align_up(capacity_bytes)), pinned_(pinned), huge_pages_(huge_pages) {
  HEADRACE_EXPECT(capacity_bytes > 0, UsageError, "staging capacity must be positive");
}

void StagingRing::allocate_memory_locked() {
  if (pinned_) {
    pinned_memory_ = huge_pages_ ? gpu::PinnedBuffer::of_huge_pages_if_possible(capacity_) : gpu::PinnedBuffer(capacity_);
    base_ = pinned_memory_.data();
  } else {
    host_memory_ = detail::AlignedBuffer(capacity_);
    base_ = host_memory_.data();
  }
}

std::uint64_t StagingRing::allocated_bytes() const {
  std::lock_guard lock(mutex_);
  return base_ != nullptr ? capacity_ : 0;
}

std::optional<Region> StagingRing::allocate_locked(std::uint64_t size) {
  if (base_ == nullptr) allocate_memory_locked();
  // The free space is [head_, oldest offset) circularly; a region never wraps, so a tail too short
  // for it is skipped (counted with the region, returned with it).
  const std::uint64_t free_bytes = capacity_ - used_;
  std::uint64_t skip = 0;
  if (head_ + size > capacity_) skip = capacity_ - head_;
  if (skip + size > free_bytes) return std::nullopt;
  const std::uint64_t offset = skip ? 0 : head_;
  allocations_.push_back({offset, size + skip, false});
  used_ += size + skip;
  head_ = (offset + size) % capacity_;
  return Region{offset, size, base_ + offset};
}

std::optional<Region> StagingRing::try_acquire(std::uint64_t size_bytes) {
  const std::uint64_t size = format::layout::align_up(std::max<std::uint64_t>(size_bytes, 1));
  HEADRACE_EXPECT(size <= capacity_, UsageError,
                  "a staging region of " + std::to_string(size) + " bytes does not fit the staging ring of " +
                      std::to_string(capacity_) + " bytes (raise the queue's staging_bytes)");
  std::lock_guard lock(mutex_);
  return allocate_locked(size);
}

void StagingRing::release(const Region& region) {
  {
    std::lock_guard lock(mutex_);
    for (auto& allocation : allocations_) {
      if (!allocation.released && allocation.offset == region.offset) {  // live regions never share an offset
        allocation.released = true;
        break;
      }
    }
    while (!allocations_.empty() && allocations_.front().released) {
      used_ -= allocations_.front().size;
      allocations_.pop_front();
    }
    if (allocations_.empty()) head_ = 0;  // an empty ring starts over: no tail to skip
  }
}

std::string StagingRing::memory_description() const {
  if (!pinned_) return "pageable";
  std::lock_guard lock(mutex_);
  if (base_ != nullptr) return "pinned, " + pinned_memory_.how();
  return huge_pages_ ? "pinned, huge pages if the kernel gives them (made at the first read)" : "pinned, cuMemHostAlloc";
}

std::uint64_t StagingRing::in_use_bytes() const {
  std::lock_guard lock(mutex_);
  return used_;
}

}  // namespace headrace::staging
