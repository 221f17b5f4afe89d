#include "headrace/detail/huge_pages.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

namespace headrace::detail {
namespace {

// Linux 5.14 and 6.1; named here for older headers.
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

}  // namespace

std::optional<HugePageMemory> HugePageMemory::make(std::size_t size_bytes, std::string& why_not) {
  const std::size_t size = (size_bytes + huge_page_bytes - 1) / huge_page_bytes * huge_page_bytes;
  if (size == 0) {
    why_not = "no bytes asked for";
    return std::nullopt;
  }
  // A huge page more than asked, so that a 2 MiB-aligned run lies inside; the ends around it go back.
  void* mapped = ::mmap(nullptr, size + huge_page_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) {
    why_not = "mmap of " + std::to_string(size) + " bytes failed: " + std::strerror(errno);
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
  // Fault every page in now, not at the first read into it (a write per huge page does it where
  // MADV_POPULATE_WRITE is unknown).
  if (::madvise(memory.data_, size, MADV_POPULATE_WRITE) != 0) {
    for (std::size_t offset = 0; offset < size; offset += huge_page_bytes) memory.data_[offset] = std::byte{0};
  }
  // A fault takes 4 KiB pages where no free 2 MiB run was at hand; MADV_COLLAPSE makes the range huge
  // pages now, or fails saying so (it returns at once for a range already in huge pages).
  if (::madvise(memory.data_, size, MADV_COLLAPSE) != 0) {
    why_not = std::string("madvise(MADV_COLLAPSE) failed: ") + std::strerror(errno) +
              " (transparent huge pages off in /sys/kernel/mm/transparent_hugepage/enabled, memory too fragmented, or "
              "a kernel older than 6.1)";
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
