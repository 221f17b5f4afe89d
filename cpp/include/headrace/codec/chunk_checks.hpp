// The host's work on a batch of stored chunks before they reach their destinations: each chunk's
// checksum (when it has one and must be checked), then its CPU decoding (when it decodes on the CPU),
// in parallel on a pool that lives with its owner. Chunks of page-locked files are checked once: their
// pages stay in RAM and are never read from the disk again, and headrace's writers never change a file
// in place (they write a new one and rename it).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "headrace/detail/thread_pool.hpp"
#include "headrace/codec/chain.hpp"

namespace headrace::codec {

struct ChunkCheck {
  const std::byte* stored = nullptr;
  std::uint64_t stored_size = 0;
  std::optional<std::uint64_t> checksum;  // xxh3-64 of the stored bytes; checked when given and `verify`
  bool verify = true;
  // xxh3-64 of the stored bytes, computed as they were read: compared instead of hashing them again.
  std::optional<std::uint64_t> landed_sum;
  const Chain* chain = nullptr;      // how it is stored (null or empty: as it is)
  std::byte* decode_into = nullptr;  // CPU-decode raw_size bytes here; null: no CPU decoding
  std::uint64_t raw_size = 0;
  std::string_view label;            // names the chunk in errors
  std::uint64_t file_offset = 0;     // for errors
  // Set for chunks of a page-locked file (file id, offset): a checksum that passed once is not computed again.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> pinned_at;
};

struct ChunkCheckResult {
  std::exception_ptr error;  // null when the chunk is fine; else as thrown (ChecksumMismatchError, CodecError)
  double decode_seconds = 0;  // CPU decoding, when it decoded
};

class ChunkChecker {
 public:
  // threads: the calling thread plus threads - 1 workers (0: one per core).
  explicit ChunkChecker(unsigned threads);

  // Checks and decodes every chunk, in parallel; one result per chunk.
  [[nodiscard]] std::vector<ChunkCheckResult> run(std::span<const ChunkCheck> chunks);
  // Whether a page-locked chunk's checksum passed before (then it is not computed again).
  [[nodiscard]] bool checked_before(const ChunkCheck& chunk);
  // The chunk's sum computed elsewhere (on the GPU, where it landed), compared as run() compares its
  // own: the error, or null (and a page-locked chunk's range remembered).
  [[nodiscard]] std::exception_ptr compare(const ChunkCheck& chunk, std::uint64_t sum);
  // Checksums computed so far (page-locked chunks: once each).
  [[nodiscard]] std::uint64_t checksums_checked() const noexcept { return checksums_checked_; }

 private:
  using VerifiedRange = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t>;  // file, offset, size, sum
  [[nodiscard]] static std::optional<VerifiedRange> range_of(const ChunkCheck& chunk);
  ChunkCheckResult check_one(const ChunkCheck& chunk);
  // Throws ChecksumMismatchError naming the chunk; counts it and remembers a page-locked range.
  void expect_sum(const ChunkCheck& chunk, std::uint64_t sum);

  std::optional<detail::ThreadPool> pool_;  // empty with one thread: the caller alone
  std::mutex verified_mutex_;
  std::set<VerifiedRange> verified_;
  std::atomic<std::uint64_t> checksums_checked_{0};
};

}  // namespace headrace::codec
