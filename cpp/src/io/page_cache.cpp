#include "headrace/io/page_cache.hpp"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "headrace/error.hpp"

namespace headrace::io {
namespace {

// A number a cgroup or /proc file holds ("max" and unreadable files: none).
std::optional<std::uint64_t> number_in(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// This process's cgroup v2 folder ("0::/path" in /proc/self/cgroup), or "" on cgroup v1.
std::string own_cgroup() {
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
  return "";
}

}  // namespace

std::optional<std::uint64_t> cgroup_memory_limit() {
  const std::string cgroup = own_cgroup();
  return cgroup.empty() ? std::nullopt : number_in(cgroup + "/memory.max");
}

std::uint64_t memory_for_page_cache() {
  std::uint64_t available = 0;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    std::istringstream fields(line);
    std::string name;
    std::uint64_t kib = 0;
    if (fields >> name >> kib && name == "MemAvailable:") available = kib << 10;
  }
  if (const auto limit = cgroup_memory_limit()) {
    const auto used = number_in(own_cgroup() + "/memory.current");
    const std::uint64_t left = *limit > used.value_or(0) ? *limit - used.value_or(0) : 0;
    available = available == 0 ? left : std::min(available, left);
  }
  return available;
}

PageCacheResidency::PageCacheResidency(const std::string& path)
    : path_(path), fd_(headrace::detail::FileDescriptor::open_read(path, 0)) {
  struct stat info {};
  if (::fstat(fd_.get(), &info) != 0) HEADRACE_THROW_SYSTEM("fstat", path);
  file_size_ = static_cast<std::uint64_t>(info.st_size);
  if (file_size_ > 0)
    mapping_ = headrace::detail::MemoryMapping::map_read(fd_.get(), 0, file_size_, path + " (page-cache residency)",
                                                         headrace::detail::MemoryMapping::Sharing::shared_pages);
}

std::uint64_t PageCacheResidency::resident_bytes(std::uint64_t offset, std::uint64_t size) const {
  return scan(offset, size, false);
}

bool PageCacheResidency::fully_resident(std::uint64_t offset, std::uint64_t size) const {
  return size > 0 && offset + size <= file_size_ && scan(offset, size, true) == size;
}

std::uint64_t PageCacheResidency::scan(std::uint64_t offset, std::uint64_t size, bool stop_at_absent) const {
  static const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t end = std::min(offset + size, file_size_);
  if (offset >= end) return 0;
  // mincore answers a page per byte; a window bounds the vector for ranges of any size.
  constexpr std::uint64_t window_pages = 1 << 16;
  std::vector<unsigned char> pages(static_cast<std::size_t>(std::min(window_pages, (end - offset + page - 1) / page + 1)));
  std::uint64_t resident = 0;
  for (std::uint64_t first = offset - offset % page; first < end; first += window_pages * page) {
    const std::uint64_t last = std::min(end, first + window_pages * page);
    const std::uint64_t count = (last - first + page - 1) / page;
    auto* at = const_cast<std::byte*>(mapping_.data()) + first;
    if (::mincore(at, last - first, pages.data()) != 0) HEADRACE_THROW_SYSTEM("mincore", path_);
    for (std::uint64_t p = 0; p < count; ++p) {
      if ((pages[p] & 1u) == 0) {
        if (stop_at_absent) return resident;
        continue;
      }
      const std::uint64_t page_start = std::max(first + p * page, offset);
      const std::uint64_t page_end = std::min(first + (p + 1) * page, end);
      resident += page_end - page_start;
    }
  }
  return resident;
}

}  // namespace headrace::io
