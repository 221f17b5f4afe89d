#include "headrace/detail/huge_pages.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

namespace headrace::detail {
namespace {

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

std::size_t kilobytes_of(const std::string& line) {
  std::istringstream fields(line.substr(line.find(':') + 1));
  std::size_t kilobytes = 0;
  fields >> kilobytes;
  return kilobytes << 10;
}

}  // namespace

std::optional<HugePageCount> huge_pages_of_mapping(const void* address) {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  std::optional<HugePageCount> found;
  for (std::string line; std::getline(smaps, line);) {
    const std::size_t dash = line.find('-');
    const bool header = dash != std::string::npos && dash > 0 && line.find(':') > line.find(' ');
    if (header) {
      if (found) return found;  // the next mapping's header: ours is read
      const std::uintptr_t start = std::stoull(line.substr(0, dash), nullptr, 16);
      const std::uintptr_t end = std::stoull(line.substr(dash + 1, line.find(' ') - dash - 1), nullptr, 16);
      if (start <= at && at < end) found = HugePageCount{end - start, 0};
    } else if (found && line.rfind("AnonHugePages:", 0) == 0) {
      found->huge_bytes = kilobytes_of(line);
    }
  }
  return found;
}

std::optional<HugePageMemory> HugePageMemory::make(std::size_t size_bytes, std::string& why_not) {
  const std::size_t size = (size_bytes + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
  if (size == 0) {
    why_not = "no bytes asked for";
    return std::nullopt;
  }
  // A huge page more than asked, so that a 2 MiB-aligned run lies inside; the ends around it go back.
  void* mapped = ::mmap(nullptr, size + huge_page_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) {
    why_not = std::string("mmap of ") + std::to_string(size) + " bytes failed: " + std::strerror(errno);
    return std::nullopt;
  }
  const auto base = reinterpret_cast<std::uintptr_t>(mapped);
  const std::uintptr_t aligned = (base + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
  if (aligned > base) ::munmap(mapped, aligned - base);
  if (const std::uintptr_t tail = base + size + huge_page_bytes - (aligned + size); tail > 0)
    ::munmap(reinterpret_cast<void*>(aligned + size), tail);
  HugePageMemory memory;
  memory.data_ = reinterpret_cast<std::byte*>(aligned);
  memory.size_bytes_ = size;
  if (::madvise(memory.data_, size, MADV_HUGEPAGE) != 0) {
    why_not = std::string("madvise(MADV_HUGEPAGE) failed: ") + std::strerror(errno) + " (no transparent huge pages)";
    return std::nullopt;
  }
  // Fault every page in now, not at the first read into it; without MADV_POPULATE_WRITE, a write per
  // huge page does it.
  if (::madvise(memory.data_, size, MADV_POPULATE_WRITE) != 0) {
    for (std::size_t offset = 0; offset < size; offset += huge_page_bytes) memory.data_[offset] = std::byte{0};
  }
  const auto count = huge_pages_of_mapping(memory.data_);
  if (!count || count->huge_bytes < count->mapping_bytes) {
    why_not = "the kernel backed " + std::to_string(count ? count->huge_bytes : 0) + " of " + std::to_string(size) +
              " bytes with transparent huge pages (/sys/kernel/mm/transparent_hugepage/enabled, or memory too fragmented)";
    return std::nullopt;
  }
  return memory;
}

HugePageMemory::HugePageMemory(HugePageMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_bytes_(std::exchange(other.size_bytes_, 0)) {}

HugePageMemory& HugePageMemory::operator=(HugePageMemory&& other) noexcept {
  if (this != &other) {
    close();
    data_ = std::exchange(other.data_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
  }
  return *this;
}

void HugePageMemory::close() noexcept {
  if (data_ != nullptr) ::munmap(data_, size_bytes_);
  data_ = nullptr;
  size_bytes_ = 0;
}

}  // namespace headrace::detail
