// One file as the read path reads it: per read, cached ranges through a buffered backend (memory speed)
// and the rest with O_DIRECT (disk speed, the cache neither read nor filled), as the cache policy says;
// or one forced backend for every read (the benchmark lab's methods). Fallbacks (no io_uring, no
// O_DIRECT on this file system) are taken and said, or refused when strict.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "headrace/io/backend.hpp"
#include "headrace/io/page_cache.hpp"
#include "headrace/io/read_ahead.hpp"

namespace headrace::io {

// How a read travels, and so where its bytes come from.
enum class ReadRoute : std::uint8_t {
  cached,           // buffered read of pages the cache holds
  direct,           // O_DIRECT read from the disk
  forced_buffered,  // a forced buffered backend: the kernel serves the cache or the disk
  forced_direct,    // a forced O_DIRECT backend
  kept,             // buffered read from the disk, read ahead by the kernel and kept for the next pass
                    // (cache policy keep)
};

struct ReadPathOptions {
  std::optional<BackendKind> forced;  // nullopt: the read path
  CachePolicy cache_policy = CachePolicy::auto_;
  Settings settings = headrace::settings();
  bool strict = false;  // a fallback throws UnavailableError instead
  // Cache policy keep: the bytes the page cache may take (0: memory_for_page_cache() when the file opens).
  std::uint64_t page_cache_bytes = 0;
  // Cache policy keep: how far the kernel reads a kept file ahead of the furthest kept read asked for
  // (0: not at all).
  std::uint64_t read_ahead_bytes = std::uint64_t{512} << 20;

  // A cache policy other than auto needs the read path; throws UsageError naming both.
  void validate() const;
};

class FileReadPath {
 public:
  // Opens path's backends; throws FileNotFoundError, UnavailableError (a forced backend that cannot
  // work here, or a fallback under strict) or UsageError (a cache policy with a forced backend).
  FileReadPath(const std::string& path, const ReadPathOptions& options);

  // The route of a read of [offset, offset + size), asking the page cache when the policy says auto.
  [[nodiscard]] ReadRoute route(std::uint64_t offset, std::uint64_t size) const;
  // A read of [offset, offset + size) is planned on `route`: a kept one moves the read-ahead on to it.
  void will_read(ReadRoute route, std::uint64_t offset, std::uint64_t size) const;
  // The backend that carries a route's reads (thread-safe to submit to).
  [[nodiscard]] Backend& backend(ReadRoute route) const;
  // The read path's view of the page cache; null with a forced backend.
  [[nodiscard]] const PageCacheResidency* residency() const noexcept { return residency_.get(); }
  // The fallback taken when the file was opened ("" for none), e.g. O_DIRECT unavailable.
  [[nodiscard]] const std::string& fallback() const noexcept { return fallback_; }
  // Cache policy keep: whether this file's uncached reads are kept, and why ("" under other policies).
  [[nodiscard]] bool keeps() const noexcept { return keeps_; }
  [[nodiscard]] const std::string& cache_choice() const noexcept { return cache_choice_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  CachePolicy policy_;
  std::unique_ptr<Backend> buffered_;  // cached reads; with a forced backend, every read
  std::unique_ptr<Backend> direct_;    // uncached reads, O_DIRECT; null when forced or without O_DIRECT
  std::unique_ptr<Backend> kept_;      // kept reads: io_uring, buffered (else the buffered backend); null unless kept
  std::unique_ptr<ReadAhead> read_ahead_;  // the kernel reading a kept file ahead of kept_'s reads
  ReadRoute forced_route_ = ReadRoute::cached;  // what a forced backend's reads are
  bool forced_ = false;
  bool keeps_ = false;
  std::string cache_choice_;
  std::unique_ptr<PageCacheResidency> residency_;
  std::string fallback_;
};

}  // namespace headrace::io
