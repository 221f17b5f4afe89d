// Drops a file's range from the page cache (clean pages), for tests of the cached and uncached routes.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "headrace/io/page_cache.hpp"

namespace headrace::testing {

// True once no page of [offset, offset + size) is cached; false when the file system keeps them (tmpfs).
// Pages just read may sit in another CPU's LRU batch, where fadvise cannot drop them: a few tries.
inline bool evict(const std::string& path, std::uint64_t offset, std::uint64_t size) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    ::fdatasync(fd);
    ::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(size), POSIX_FADV_DONTNEED);
    ::close(fd);
    if (io::PageCacheResidency(path).resident_bytes(offset, size) == 0) return true;
    ::usleep(10000);
  }
  return false;
}

// True once the condition holds, polled for up to 5 s (the kernel's read-ahead lands on its own time).
template <typename Condition>
bool eventually(Condition condition) {
  for (int attempt = 0; attempt < 500; ++attempt) {
    if (condition()) return true;
    ::usleep(10000);
  }
  return condition();
}

// True once every page of [offset, offset + size) is cached, within 5 s.
inline bool becomes_resident(const io::PageCacheResidency& residency, std::uint64_t offset, std::uint64_t size) {
  return eventually([&] { return residency.fully_resident(offset, size); });
}

}  // namespace headrace::testing
