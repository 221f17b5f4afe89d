#include "headrace/codec/chunk_checks.hpp"

#include <algorithm>
#include <thread>

#include "headrace/detail/parallel_for.hpp"
#include "headrace/detail/seconds.hpp"
#include "headrace/detail/thread_name.hpp"
#include "headrace/error.hpp"
#include "headrace/format/checksum.hpp"

namespace headrace::codec {

ChunkChecker::ChunkChecker(unsigned threads) {
  const unsigned count = threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  if (count > 1) pool_.emplace(count - 1, detail::checker_thread_name);
}

std::optional<ChunkChecker::VerifiedRange> ChunkChecker::range_of(const ChunkCheck& chunk) {
  if (!chunk.pinned_at || !chunk.checksum) return std::nullopt;
  return VerifiedRange{chunk.pinned_at->first, chunk.pinned_at->second, chunk.stored_size, *chunk.checksum};
}

bool ChunkChecker::checked_before(const ChunkCheck& chunk) {
  const auto range = range_of(chunk);
  if (!range) return false;
  std::lock_guard lock(verified_mutex_);
  return verified_.count(*range) != 0;
}

void ChunkChecker::expect_sum(const ChunkCheck& chunk, std::uint64_t sum) {
  HEADRACE_EXPECT(sum == *chunk.checksum, ChecksumMismatchError,
                  std::string(chunk.label) + ": expected checksum " + std::to_string(*chunk.checksum) + ", found " + std::to_string(sum));
  ++checksums_checked_;
  if (const auto range = range_of(chunk)) {
    std::lock_guard lock(verified_mutex_);
    verified_.insert(*range);
  }
}

std::exception_ptr ChunkChecker::compare(const ChunkCheck& chunk, std::uint64_t sum) {
  try {
    expect_sum(chunk, sum);
  } catch (const std::exception&) {
    return std::current_exception();
  }
  return nullptr;
}

ChunkCheckResult ChunkChecker::check_one(const ChunkCheck& chunk) {
  ChunkCheckResult result;
  try {
    if (chunk.checksum && chunk.verify && !checked_before(chunk))
      expect_sum(chunk, chunk.landed_sum ? *chunk.landed_sum : format::xxh3_64({chunk.stored, chunk.stored_size}));
    if (chunk.decode_into != nullptr) {
      const auto start = detail::SteadyClock::now();
      HEADRACE_EXPECT(chunk.chain != nullptr && !chunk.chain->empty(), UsageError,
                      std::string(chunk.label) + ": CPU decoding asked for a chunk stored as it is");
      chunk.chain->decode({chunk.stored, chunk.stored_size}, {chunk.decode_into, chunk.raw_size}, std::string(chunk.label));
      result.decode_seconds = detail::seconds_since(start);
    }
  } catch (const std::exception&) {
    result.error = std::current_exception();
  }
  return result;
}

std::vector<ChunkCheckResult> ChunkChecker::run(std::span<const ChunkCheck> chunks) {
  std::vector<ChunkCheckResult> results(chunks.size());
  auto one = [&](std::uint64_t i) { results[i] = check_one(chunks[i]); };
  if (pool_) {
    detail::parallel_for(*pool_, chunks.size(), one);
  } else {
    for (std::uint64_t i = 0; i < chunks.size(); ++i) one(i);
  }
  return results;
}

}  // namespace headrace::codec
