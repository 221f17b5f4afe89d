// The user-managed block cache: LRU eviction per bank, pinned units never evicted, one read per unit
// however many threads want it, failures that reach the caller and leave the cache usable.
#include "headrace/workloads/streamlines/block_cache.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "headrace/error.hpp"

namespace headrace::workloads::streamlines {
namespace {

constexpr std::uint64_t unit_bytes = 1000;  // not a multiple of 4 KiB: slots are padded

// Fills unit k with bytes (k * 7 + i) mod 256 and counts the reads.
struct PatternLoader {
  std::shared_ptr<std::atomic<int>> reads = std::make_shared<std::atomic<int>>(0);
  void operator()(std::uint64_t unit, std::span<std::byte> into) const {
    ++*reads;
    for (std::size_t i = 0; i < into.size(); ++i) into[i] = std::byte(static_cast<unsigned>((unit * 7 + i) % 256));
  }
};

bool holds(const BlockCache::Handle& handle, std::uint64_t unit) {
  for (std::size_t i = 0; i < unit_bytes; ++i)
    if (handle.data()[i] != std::byte(static_cast<unsigned>((unit * 7 + i) % 256))) return false;
  return true;
}

TEST(BlockCache, EvictsTheLeastRecentlyUsedUnit) {
  PatternLoader loader;
  BlockCache cache(unit_bytes, 4 * unit_bytes, 1, loader);
  for (std::uint64_t unit : {0, 1, 2, 3}) EXPECT_TRUE(holds(cache.acquire(unit), unit));
  EXPECT_TRUE(holds(cache.acquire(0), 0));  // a hit: 1 is now the oldest
  EXPECT_TRUE(holds(cache.acquire(4), 4));  // evicts 1
  EXPECT_TRUE(holds(cache.acquire(0), 0));
  EXPECT_EQ(*loader.reads, 5);
  EXPECT_TRUE(holds(cache.acquire(1), 1));  // read again
  const auto stats = cache.stats();
  EXPECT_EQ(stats.misses, 6u);
  EXPECT_EQ(stats.hits, 2u);
  EXPECT_EQ(stats.evictions, 2u);
  EXPECT_EQ(stats.bytes_read, 6 * unit_bytes);
  EXPECT_EQ(stats.max_loads_in_flight, 1u);  // one thread: one read at a time
}

TEST(BlockCache, NeverEvictsAPinnedUnit) {
  PatternLoader loader;
  BlockCache cache(unit_bytes, 2 * unit_bytes, 1, loader);
  const auto held = cache.acquire(0);
  for (std::uint64_t unit = 1; unit < 10; ++unit) EXPECT_TRUE(holds(cache.acquire(unit), unit));
  EXPECT_TRUE(holds(held, 0));
  EXPECT_EQ(*loader.reads, 10);
}

TEST(BlockCache, BanksShareTheCapacityAndEvictOnTheirOwn) {
  PatternLoader loader;
  BlockCache cache(unit_bytes, 4 * unit_bytes, 2, loader);  // two slots per bank
  EXPECT_EQ(cache.bank_count(), 2u);
  for (std::uint64_t unit : {0, 2, 1, 3}) (void)cache.acquire(unit);  // bank 0: 0 2; bank 1: 1 3
  (void)cache.acquire(4);  // bank 0 evicts 0; bank 1 keeps 1 and 3
  (void)cache.acquire(1);
  (void)cache.acquire(3);
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_EQ(cache.stats().hits, 2u);
  EXPECT_THROW(BlockCache(unit_bytes, 3 * unit_bytes, 4, loader), UsageError);
}

TEST(BlockCache, AFailedLoadReachesTheCallerAndLeavesTheSlotFree) {
  std::atomic<int> calls = 0;
  BlockCache cache(unit_bytes, unit_bytes, 1, [&](std::uint64_t unit, std::span<std::byte> into) {
    if (calls++ == 0) throw std::runtime_error("block " + std::to_string(unit) + ": read failed");
    PatternLoader{}(unit, into);
  });
  EXPECT_THROW((void)cache.acquire(5), std::runtime_error);
  EXPECT_TRUE(holds(cache.acquire(5), 5));  // tried again, and the only slot was free for it
  EXPECT_EQ(cache.stats().misses, 2u);
}

TEST(BlockCache, AThreadWaitsForAFreeSlotInsteadOfEvictingAPinnedOne) {
  PatternLoader loader;
  BlockCache cache(unit_bytes, unit_bytes, 1, loader);
  auto held = cache.acquire(0);
  std::atomic<bool> got = false;
  std::thread other([&] {
    EXPECT_TRUE(holds(cache.acquire(1), 1));
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got);
  held.release();
  other.join();
  EXPECT_TRUE(got);
  EXPECT_GE(cache.stats().waits, 1u);
}

// Many threads, few slots: every handle holds its unit's bytes, and no unit is ever read by two
// threads at once.
TEST(BlockCache, ManyThreadsReadEachUnitOnceAtATime) {
  constexpr std::uint64_t units = 64;
  std::vector<std::atomic<int>> loading(units);
  std::atomic<bool> overlap = false;
  BlockCache cache(unit_bytes, 8 * unit_bytes, 4, [&](std::uint64_t unit, std::span<std::byte> into) {
    if (loading[unit]++ != 0) overlap = true;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    PatternLoader{}(unit, into);
    --loading[unit];
  });
  std::atomic<std::uint64_t> acquisitions = 0, wrong = 0;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 random(t);
      for (int n = 0; n < 400; ++n) {
        const std::uint64_t unit = random() % 8 == 0 ? random() % units : random() % 6;  // a hot set
        const auto handle = cache.acquire(unit);
        if (!holds(handle, unit)) ++wrong;
        ++acquisitions;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_FALSE(overlap);
  EXPECT_EQ(wrong, 0u);
  const auto stats = cache.stats();
  EXPECT_EQ(stats.hits + stats.misses, acquisitions.load());
  EXPECT_GT(stats.hits, stats.misses);  // the hot set stays cached
  EXPECT_GE(stats.max_loads_in_flight, 2u);  // 16 threads on 4 banks: reads overlapped
  EXPECT_LE(stats.max_loads_in_flight, 8u);  // never more than the slots
}

}  // namespace
}  // namespace headrace::workloads::streamlines
