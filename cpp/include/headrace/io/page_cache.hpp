// Which bytes of a file the page cache holds now: the read path sends cached ranges through buffered
// reads (memory speed) and the rest through O_DIRECT (disk speed, no cache pollution). The file is
// mapped without touching its pages, and mincore(2) answers per page; nothing is read or faulted in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "headrace/detail/file_descriptor.hpp"
#include "headrace/detail/enum_names.hpp"
#include "headrace/detail/memory_mapping.hpp"

namespace headrace::io {

// Where a read asks the bytes to come from (docs/settings.md, HEADRACE_CACHE_POLICY).
enum class CachePolicy : std::uint8_t {
  auto_,   // cached ranges buffered, the rest O_DIRECT, decided per request
  bypass,  // everything O_DIRECT: the cache is neither read nor filled
  use,     // everything buffered: the cache serves what it holds and keeps what is read
  keep,    // auto, but a file that fits the memory the page cache may take is read buffered and kept
           // there, so its next pass is hot (memory_for_page_cache); a larger one as auto
};
inline constexpr detail::EnumNames<CachePolicy, 4> cache_policy_names{
    {{CachePolicy::auto_, "auto"}, {CachePolicy::bypass, "bypass"}, {CachePolicy::use, "use"}, {CachePolicy::keep, "keep"}}};
[[nodiscard]] constexpr const char* to_string(CachePolicy policy) noexcept { return detail::name_of(cache_policy_names, policy); }
// Throws UsageError naming the choices.
[[nodiscard]] inline CachePolicy parse_cache_policy(const std::string& text) {
  return detail::parse_name(cache_policy_names, text, "cache policy");
}

// This process's cgroup (v2) memory.max, or nullopt where none is set ("max") or readable.
[[nodiscard]] std::optional<std::uint64_t> cgroup_memory_limit();

// The bytes the page cache may take now: the kernel's MemAvailable, or less where this process's cgroup
// (v2) has a memory.max: that limit less its memory.current. 0 when neither can be read.
[[nodiscard]] std::uint64_t memory_for_page_cache();

class PageCacheResidency {
 public:
  // Throws FileNotFoundError when path cannot be opened, SystemError when it cannot be mapped.
  explicit PageCacheResidency(const std::string& path);

  // Bytes of [offset, offset + size) whose pages are in the page cache (whole pages counted; past the
  // end of the file counts as absent). Thread-safe.
  [[nodiscard]] std::uint64_t resident_bytes(std::uint64_t offset, std::uint64_t size) const;
  // Whether every page of [offset, offset + size) is cached: stops at the first page that is not, so a
  // cold file answers at once however large it is.
  [[nodiscard]] bool fully_resident(std::uint64_t offset, std::uint64_t size) const;
  [[nodiscard]] std::uint64_t file_size() const noexcept { return file_size_; }

 private:
  // Resident bytes of the range, counted up to the first absent page when stop_at_absent.
  [[nodiscard]] std::uint64_t scan(std::uint64_t offset, std::uint64_t size, bool stop_at_absent) const;

  std::string path_;
  std::uint64_t file_size_ = 0;
  headrace::detail::FileDescriptor fd_;
  headrace::detail::MemoryMapping mapping_;  // PROT_READ, never touched: mincore's view of the file
};

}  // namespace headrace::io
