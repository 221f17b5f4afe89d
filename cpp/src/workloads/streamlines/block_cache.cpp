#include "headrace/workloads/streamlines/block_cache.hpp"

#include <utility>

#include "headrace/error.hpp"

namespace headrace::workloads::streamlines {
namespace {

std::uint64_t aligned(std::uint64_t bytes) {
  const std::uint64_t a = detail::io_alignment_bytes;
  return (bytes + a - 1) / a * a;
}

}  // namespace

BlockCache::BlockCache(std::uint64_t unit_bytes, std::uint64_t capacity_bytes, unsigned banks, Loader loader)
    : unit_bytes_(unit_bytes), loader_(std::move(loader)) {
  HEADRACE_EXPECT(unit_bytes > 0 && banks > 0 && loader_, UsageError,
                  "a block cache needs units of at least one byte, one bank and a loader");
  const std::uint64_t slot_count = capacity_bytes / unit_bytes;
  HEADRACE_EXPECT(slot_count >= banks, UsageError,
                  "a block cache of " + std::to_string(capacity_bytes) + " bytes holds " + std::to_string(slot_count) +
                      " units of " + std::to_string(unit_bytes) + " bytes: fewer than its " + std::to_string(banks) +
                      " banks (each needs one)");
  memory_ = detail::AlignedBuffer(static_cast<std::size_t>(aligned(unit_bytes) * slot_count));
  slots_.resize(slot_count);
  for (unsigned b = 0; b < banks; ++b) banks_.push_back(std::make_unique<Bank>());
  // Slots are dealt to the banks in turn: each bank owns an equal share of the capacity.
  for (std::uint32_t s = 0; s < slot_count; ++s) banks_[s % banks]->empty.push_back(s);
}

BlockCache::~BlockCache() = default;

BlockCache::Handle BlockCache::acquire(std::uint64_t unit) {
  Bank& bank = bank_of(unit);
  std::unique_lock lock(bank.mutex);
  bool waited = false;
  for (;;) {
    if (auto found = bank.where.find(unit); found != bank.where.end()) {
      Slot& slot = slots_[found->second];
      if (slot.state == Slot::State::loading) {  // another thread reads it: wait for that read
        waited = true;
        bank.changed.wait(lock);
        continue;
      }
      if (slot.pins++ == 0) bank.lru.erase(slot.in_lru);
      ++bank.stats.hits;
      bank.stats.waits += waited;
      Handle handle;
      handle.cache_ = this;
      handle.slot_ = found->second;
      handle.unit_ = unit;
      handle.data_ = memory_.data() + found->second * aligned(unit_bytes_);
      return handle;
    }
    // A miss: take an empty slot, else evict the least recently used unpinned one, else wait.
    std::uint32_t victim = 0;
    if (!bank.empty.empty()) {
      victim = bank.empty.back();
      bank.empty.pop_back();
    } else if (!bank.lru.empty()) {
      victim = bank.lru.front();
      bank.lru.pop_front();
      bank.where.erase(slots_[victim].unit);
      ++bank.stats.evictions;
    } else {
      waited = true;
      bank.changed.wait(lock);
      continue;
    }
    Slot& slot = slots_[victim];
    slot.unit = unit;
    slot.state = Slot::State::loading;
    slot.pins = 1;
    bank.where[unit] = victim;
    ++bank.stats.misses;
    bank.stats.waits += waited;
    std::byte* data = memory_.data() + victim * aligned(unit_bytes_);
    lock.unlock();
    const std::uint64_t now_loading = ++loads_in_flight_;
    std::uint64_t seen = max_loads_in_flight_;  // raise the maximum; a failed exchange reloads `seen`
    while (now_loading > seen && !max_loads_in_flight_.compare_exchange_weak(seen, now_loading)) {
    }
    try {
      loader_(unit, {data, static_cast<std::size_t>(unit_bytes_)});
      --loads_in_flight_;
    } catch (...) {
      --loads_in_flight_;
      lock.lock();
      bank.where.erase(unit);
      slot.state = Slot::State::empty;
      slot.pins = 0;
      bank.empty.push_back(victim);
      bank.changed.notify_all();  // waiters for this unit try it themselves (and fail alike)
      throw;
    }
    lock.lock();
    slot.state = Slot::State::ready;
    bank.stats.bytes_read += unit_bytes_;
    bank.changed.notify_all();
    Handle handle;
    handle.cache_ = this;
    handle.slot_ = victim;
    handle.unit_ = unit;
    handle.data_ = data;
    return handle;
  }
}

void BlockCache::unpin(std::uint32_t slot_index) noexcept {
  Slot& slot = slots_[slot_index];
  Bank& bank = bank_of(slot.unit);
  std::lock_guard lock(bank.mutex);
  if (--slot.pins == 0) {
    slot.in_lru = bank.lru.insert(bank.lru.end(), slot_index);
    bank.changed.notify_all();  // a thread may wait for a free slot
  }
}

BlockCacheStats BlockCache::stats() const {
  BlockCacheStats total;
  for (const auto& bank : banks_) {
    std::lock_guard lock(bank->mutex);
    total.hits += bank->stats.hits;
    total.misses += bank->stats.misses;
    total.evictions += bank->stats.evictions;
    total.bytes_read += bank->stats.bytes_read;
    total.waits += bank->stats.waits;
  }
  total.max_loads_in_flight = max_loads_in_flight_;
  return total;
}

BlockCache::Handle::Handle(Handle&& other) noexcept
    : cache_(std::exchange(other.cache_, nullptr)), slot_(other.slot_), unit_(other.unit_), data_(other.data_) {}

BlockCache::Handle& BlockCache::Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    release();
    cache_ = std::exchange(other.cache_, nullptr);
    slot_ = other.slot_;
    unit_ = other.unit_;
    data_ = other.data_;
  }
  return *this;
}

void BlockCache::Handle::release() noexcept {
  if (cache_ != nullptr) std::exchange(cache_, nullptr)->unpin(slot_);
}

}  // namespace headrace::workloads::streamlines
