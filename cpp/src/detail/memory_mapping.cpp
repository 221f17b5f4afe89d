#include "headrace/detail/memory_mapping.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "headrace/error.hpp"

namespace headrace::detail {

MemoryMapping::MemoryMapping(MemoryMapping&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      mapped_bytes_(std::exchange(other.mapped_bytes_, 0)),
      data_(std::exchange(other.data_, nullptr)),
      size_bytes_(std::exchange(other.size_bytes_, 0)) {}

MemoryMapping& MemoryMapping::operator=(MemoryMapping&& other) noexcept {
  if (this != &other) {
    close();
    base_ = std::exchange(other.base_, nullptr);
    mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
    data_ = std::exchange(other.data_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
  }
  return *this;
}

MemoryMapping MemoryMapping::map_read(int fd, std::uint64_t file_offset, std::size_t size_bytes,
                                      const std::string& what, Sharing sharing) {
  static const std::uint64_t page_bytes = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t map_offset = file_offset - file_offset % page_bytes;
  const std::size_t lead_bytes = static_cast<std::size_t>(file_offset - map_offset);
  MemoryMapping mapping;
  mapping.mapped_bytes_ = lead_bytes + size_bytes;
  void* base = ::mmap(nullptr, mapping.mapped_bytes_, PROT_READ,
                      sharing == Sharing::shared_pages ? MAP_SHARED : MAP_PRIVATE, fd, static_cast<off_t>(map_offset));
  if (base == MAP_FAILED) HEADRACE_THROW_SYSTEM("mmap", what);
  mapping.base_ = base;
  mapping.data_ = static_cast<const std::byte*>(base) + lead_bytes;
  mapping.size_bytes_ = size_bytes;
  return mapping;
}

void MemoryMapping::advise_dontneed() const noexcept { ::madvise(base_, mapped_bytes_, MADV_DONTNEED); }

void MemoryMapping::close() noexcept {
  if (base_ != nullptr) ::munmap(std::exchange(base_, nullptr), mapped_bytes_);
  mapped_bytes_ = 0;
  data_ = nullptr;
  size_bytes_ = 0;
}

}  // namespace headrace::detail
