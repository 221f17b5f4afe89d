#include "headrace/gpu/memory.hpp"

#include <algorithm>
#include <utility>

#include "headrace/detail/parallel_for.hpp"
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

PinnedBuffer PinnedBuffer::of_huge_pages_if_possible(std::size_t size_bytes) {
  const CudaDriver& api = require_driver();
  std::string why_not;
  auto memory = detail::HugePageMemory::make(size_bytes, why_not);
  if (!memory) {
    PinnedBuffer buffer(size_bytes);
    buffer.how_ = "cuMemHostAlloc (no huge pages: " + why_not + ")";
    return buffer;
  }
  check(api.cuMemHostRegister(memory->data(), memory->size_bytes(), memhostregister_portable), "cuMemHostRegister",
        "pinned staging of " + std::to_string(memory->size_bytes()) + " bytes in huge pages");
  PinnedBuffer buffer;
  buffer.data_ = memory->data();
  buffer.size_bytes_ = size_bytes;
  buffer.huge_pages_ = std::move(*memory);
  buffer.how_ = "huge pages";
  return buffer;
}

void PinnedBuffer::free() noexcept {
  if (data_ == nullptr) return;
  if (huge_pages_.data() != nullptr) {
    driver()->cuMemHostUnregister(data_);
    huge_pages_ = detail::HugePageMemory();
  } else {
    driver()->cuMemFreeHost(data_);
  }
  data_ = nullptr;
}

PinnedBuffer::~PinnedBuffer() noexcept { free(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_bytes_(std::exchange(other.size_bytes_, 0)),
      huge_pages_(std::move(other.huge_pages_)),
      how_(std::move(other.how_)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    free();
    data_ = std::exchange(other.data_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
    huge_pages_ = std::move(other.huge_pages_);
    how_ = std::move(other.how_);
  }
  return *this;
}

void copy_home(void* destination, CUdeviceptr source, std::size_t size_bytes, CUstream stream, unsigned threads) {
  if (size_bytes == 0) return;
  const CudaDriver& cuda = require_driver();
  constexpr std::size_t page = 4096, stretch = std::size_t{2} << 20;  // a thread faults 2 MiB at a time
  auto* bytes = static_cast<volatile unsigned char*>(destination);
  detail::parallel_for((size_bytes + stretch - 1) / stretch, threads, [&](std::uint64_t n) {
    const std::size_t end = std::min(size_bytes, (n + 1) * stretch);
    for (std::size_t at = n * stretch; at < end; at += page) bytes[at] = 0;
  });
  const bool locked = cuda.cuMemHostRegister(destination, size_bytes, memhostregister_portable) == cuda_success;
  check(cuda.cuMemcpyDtoHAsync(destination, source, size_bytes, stream), "cuMemcpyDtoHAsync");
  const CUresult done = cuda.cuStreamSynchronize(stream);
  if (locked) (void)cuda.cuMemHostUnregister(destination);
  check(done, "cuStreamSynchronize");
}

void copy_to_host(void* destination, CUdeviceptr source, std::size_t size_bytes) {
  check(require_driver().cuMemcpyDtoH(destination, source, size_bytes), "cuMemcpyDtoH");
}

void copy_to_device(CUdeviceptr destination, const void* source, std::size_t size_bytes) {
  check(require_driver().cuMemcpyHtoD(destination, source, size_bytes), "cuMemcpyHtoD");
}

}  // namespace headrace::gpu
