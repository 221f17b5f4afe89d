#include "headrace/gpu/memory.hpp"

#include <utility>

#include "headrace/error.hpp"

namespace headrace::gpu {
namespace {
std::string free_memory_text() {
  std::size_t free_bytes = 0, total_bytes = 0;
  if (driver()->cuMemGetInfo(&free_bytes, &total_bytes) != cuda_success) return "";
  return std::to_string(free_bytes) + " of " + std::to_string(total_bytes) + " bytes free";
}
}  // namespace

DeviceBuffer::DeviceBuffer(std::size_t size_bytes) : size_bytes_(size_bytes) {
  const CudaDriver& api = require_driver();
  if (size_bytes == 0) return;
  const CUresult result = api.cuMemAlloc(&pointer_, size_bytes);
  if (result != cuda_success) {
    pointer_ = 0;
    check(result, "cuMemAlloc", "asked for " + std::to_string(size_bytes) + " bytes; " + free_memory_text());
  }
}

DeviceBuffer::~DeviceBuffer() noexcept {
  if (pointer_ != 0) driver()->cuMemFree(pointer_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : pointer_(std::exchange(other.pointer_, 0)), size_bytes_(std::exchange(other.size_bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (pointer_ != 0) driver()->cuMemFree(pointer_);
    pointer_ = std::exchange(other.pointer_, 0);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
  }
  return *this;
}

PinnedBuffer::PinnedBuffer(std::size_t size_bytes) : size_bytes_(size_bytes) {
  const CudaDriver& api = require_driver();
  if (size_bytes == 0) return;
  void* memory = nullptr;
  check(api.cuMemHostAlloc(&memory, size_bytes, memhostalloc_portable), "cuMemHostAlloc",
        "pinned staging of " + std::to_string(size_bytes) + " bytes");
  data_ = static_cast<std::byte*>(memory);
}

PinnedBuffer::~PinnedBuffer() noexcept {
  if (data_ != nullptr) driver()->cuMemFreeHost(data_);
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_bytes_(std::exchange(other.size_bytes_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) driver()->cuMemFreeHost(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
  }
  return *this;
}

void copy_to_host(void* destination, CUdeviceptr source, std::size_t size_bytes) {
  check(require_driver().cuMemcpyDtoH(destination, source, size_bytes), "cuMemcpyDtoH");
}

}  // namespace headrace::gpu
