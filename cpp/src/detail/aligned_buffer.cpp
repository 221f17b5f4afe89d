#include "headrace/detail/aligned_buffer.hpp"

#include <cstdlib>
#include <new>
#include <utility>

namespace headrace::detail {

AlignedBuffer::AlignedBuffer(std::size_t size_bytes) : size_bytes_(size_bytes) {
  if (size_bytes == 0) return;
  void* memory = nullptr;
  if (::posix_memalign(&memory, io_alignment_bytes, size_bytes) != 0) throw std::bad_alloc();
  data_ = static_cast<std::byte*>(memory);
}

AlignedBuffer::~AlignedBuffer() noexcept { std::free(data_); }

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_bytes_(std::exchange(other.size_bytes_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
  }
  return *this;
}

}  // namespace headrace::detail
