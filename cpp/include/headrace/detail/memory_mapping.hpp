// A read-only mapping of part of a file: move-only, unmapped exactly once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace headrace::detail {

class MemoryMapping {
 public:
  MemoryMapping() noexcept = default;
  ~MemoryMapping() noexcept { close(); }

  MemoryMapping(MemoryMapping&& other) noexcept;
  MemoryMapping& operator=(MemoryMapping&& other) noexcept;
  MemoryMapping(const MemoryMapping&) = delete;
  MemoryMapping& operator=(const MemoryMapping&) = delete;

  enum class Sharing {
    private_pages,  // MAP_PRIVATE
    // MAP_SHARED of a descriptor opened read-only: the mapping can never be written, so a long-term
    // pin (cuMemHostRegister) takes the page-cache pages themselves, where MAP_PRIVATE would make the
    // kernel copy every page first (it breaks copy-on-write early for such pins).
    shared_pages,
  };

  // Maps the bytes [file_offset, file_offset + size_bytes) with PROT_READ.
  // mmap(2) wants a page-aligned offset, so the covering page range is mapped and data() points at
  // file_offset inside it. Throws SystemError naming mmap() and what (the path and offset).
  [[nodiscard]] static MemoryMapping map_read(int fd, std::uint64_t file_offset, std::size_t size_bytes,
                                              const std::string& what, Sharing sharing = Sharing::private_pages);

  // The byte at the file_offset given to map_read.
  [[nodiscard]] const std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_bytes_; }
  // madvise(MADV_DONTNEED) on the whole mapping: drops this process's page references so the kernel
  // may evict the cached pages (seed 002, section 6.1.3). Advice only: on a mapping we own it
  // cannot fail in a way that would make a read wrong, so nothing is returned.
  void advise_dontneed() const noexcept;
  // Idempotent; munmap(2) of a range we mapped cannot fail for a reason we could act on.
  void close() noexcept;

 private:
  void* base_ = nullptr;  // page-aligned start returned by mmap
  std::size_t mapped_bytes_ = 0;
  const std::byte* data_ = nullptr;
  std::size_t size_bytes_ = 0;
};

}  // namespace headrace::detail
