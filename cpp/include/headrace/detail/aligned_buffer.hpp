// Host buffer aligned to 4096 bytes, as O_DIRECT and registered io_uring buffers need.
#pragma once

#include <cstddef>

namespace headrace::detail {

inline constexpr std::size_t io_alignment_bytes = 4096;

class AlignedBuffer {
 public:
  AlignedBuffer() noexcept = default;
  // Throws std::bad_alloc when the memory cannot be had. size_bytes 0 holds nothing.
  explicit AlignedBuffer(std::size_t size_bytes);
  ~AlignedBuffer() noexcept;

  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size_bytes() const noexcept { return size_bytes_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_bytes_ = 0;
};

}  // namespace headrace::detail
