// The user-managed strategy of seed 002 (section 3.2.1): a pre-allocated LRU cache of fixed-size
// units (native blocks or Hilbert chunks) with a capacity in bytes, split into banks (unit k lives in
// bank k % banks, each with its own lock and LRU list) to cut lock contention between threads. A miss
// loads the unit through a loader (standard or direct I/O, any backend) into a 4 KiB-aligned slot
// while the bank stays open to other threads; a thread asking for a unit being loaded waits for it
// instead of reading it twice. A unit in use is pinned by its Handle and never evicted under it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "headrace/detail/aligned_buffer.hpp"

namespace headrace::workloads::streamlines {

struct BlockCacheStats {
  std::uint64_t hits = 0, misses = 0, evictions = 0, bytes_read = 0;
  std::uint64_t waits = 0;  // acquisitions that waited: for a unit being loaded or for a free slot
  std::uint64_t max_loads_in_flight = 0;  // the I/O concurrency reached: reads under way at once
};

class BlockCache {
 public:
  // Fills `into` (unit_bytes, 4 KiB-aligned) with unit `unit`; throws when it cannot (the caller of
  // acquire gets the exception; the slot is freed).
  using Loader = std::function<void(std::uint64_t unit, std::span<std::byte> into)>;

  // capacity_bytes / unit_bytes slots, at least one per bank; throws UsageError otherwise.
  BlockCache(std::uint64_t unit_bytes, std::uint64_t capacity_bytes, unsigned banks, Loader loader);
  ~BlockCache();
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  class Handle {
   public:
    Handle() noexcept = default;
    Handle(Handle&& other) noexcept;
    Handle& operator=(Handle&& other) noexcept;
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle() { release(); }
    [[nodiscard]] const std::byte* data() const noexcept { return data_; }
    [[nodiscard]] std::uint64_t unit() const noexcept { return unit_; }
    [[nodiscard]] bool valid() const noexcept { return cache_ != nullptr; }
    void release() noexcept;  // unpins; idempotent

   private:
    friend class BlockCache;
    BlockCache* cache_ = nullptr;
    std::uint32_t slot_ = 0;
    std::uint64_t unit_ = 0;
    const std::byte* data_ = nullptr;
  };

  // Unit `unit`, loaded on a miss, pinned until the handle is released. A thread should release the
  // handle it holds before acquiring another from a full bank, or it may wait for itself.
  [[nodiscard]] Handle acquire(std::uint64_t unit);

  [[nodiscard]] BlockCacheStats stats() const;
  [[nodiscard]] std::uint64_t unit_bytes() const noexcept { return unit_bytes_; }
  [[nodiscard]] std::size_t slot_count() const noexcept { return slots_.size(); }
  [[nodiscard]] unsigned bank_count() const noexcept { return static_cast<unsigned>(banks_.size()); }

 private:
  struct Slot {
    std::uint64_t unit = 0;
    enum class State : std::uint8_t { empty, loading, ready } state = State::empty;
    std::uint32_t pins = 0;
    std::list<std::uint32_t>::iterator in_lru;  // valid when ready and unpinned
  };
  struct Bank {
    std::mutex mutex;
    std::condition_variable changed;
    std::unordered_map<std::uint64_t, std::uint32_t> where;  // unit -> slot (loading or ready)
    std::list<std::uint32_t> lru;                            // unpinned ready slots, oldest first
    std::vector<std::uint32_t> empty;                        // slots holding nothing
    BlockCacheStats stats;
  };

  void unpin(std::uint32_t slot) noexcept;
  Bank& bank_of(std::uint64_t unit) { return *banks_[unit % banks_.size()]; }

  std::uint64_t unit_bytes_;
  Loader loader_;
  headrace::detail::AlignedBuffer memory_;
  std::vector<Slot> slots_;
  std::vector<std::unique_ptr<Bank>> banks_;
  std::atomic<std::uint64_t> loads_in_flight_{0}, max_loads_in_flight_{0};
};

}  // namespace headrace::workloads::streamlines
