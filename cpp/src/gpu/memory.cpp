#include "headrace/gpu/memory.hpp"

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "headrace/detail/parallel_for.hpp"
#include "headrace/detail/thread_pool.hpp"
#include "headrace/gpu/stream.hpp"
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

struct HomeCopy::Ring {
  Ring(std::size_t piece, unsigned pieces, unsigned threads)
      : piece_bytes(piece), staging(PinnedBuffer::of_huge_pages_if_possible(piece * pieces)), workers(threads, "headrace-home") {
    for (unsigned n = 0; n < pieces; ++n) landed.emplace_back();
  }
  std::size_t piece_bytes;
  PinnedBuffer staging;
  std::vector<Event> landed;  // per staging buffer: its piece's DMA done
  detail::ThreadPool workers;
};

HomeCopy::HomeCopy(std::size_t piece_bytes, unsigned pieces, unsigned threads)
    : ring_(std::make_unique<Ring>(piece_bytes, pieces, threads == 0 ? std::max(1u, std::thread::hardware_concurrency()) : threads)) {}

HomeCopy::~HomeCopy() noexcept = default;

void HomeCopy::copy(void* destination, CUdeviceptr source, std::size_t size_bytes, CUstream stream) {
  Ring& ring = *ring_;
  const CudaDriver& cuda = require_driver();
  const std::size_t pieces = (size_bytes + ring.piece_bytes - 1) / ring.piece_bytes, slots = ring.landed.size();
  const auto piece_size = [&](std::size_t n) { return std::min(ring.piece_bytes, size_bytes - n * ring.piece_bytes); };
  const auto start = [&](std::size_t n) {
    std::byte* staging = ring.staging.data() + (n % slots) * ring.piece_bytes;
    check(cuda.cuMemcpyDtoHAsync(staging, source + n * ring.piece_bytes, piece_size(n), stream), "cuMemcpyDtoHAsync");
    ring.landed[n % slots].record(stream);
  };
  for (std::size_t n = 0; n < std::min(pieces, slots); ++n) start(n);
  auto* out = static_cast<std::byte*>(destination);
  for (std::size_t n = 0; n < pieces; ++n) {
    ring.landed[n % slots].synchronize();
    const std::byte* staging = ring.staging.data() + (n % slots) * ring.piece_bytes;
    const unsigned threads = ring.workers.thread_count();
    const std::size_t size = piece_size(n), share = (size + threads - 1) / threads;
    detail::parallel_for(ring.workers, threads, [&](std::uint64_t t) {
      const std::size_t from = std::min(size, t * share), to = std::min(size, from + share);
      std::memcpy(out + n * ring.piece_bytes + from, staging + from, to - from);
    });
    if (n + slots < pieces) start(n + slots);
  }
}

void copy_to_host(void* destination, CUdeviceptr source, std::size_t size_bytes) {
  check(require_driver().cuMemcpyDtoH(destination, source, size_bytes), "cuMemcpyDtoH");
}

void copy_to_device(CUdeviceptr destination, const void* source, std::size_t size_bytes) {
  check(require_driver().cuMemcpyHtoD(destination, source, size_bytes), "cuMemcpyHtoD");
}

}  // namespace headrace::gpu
