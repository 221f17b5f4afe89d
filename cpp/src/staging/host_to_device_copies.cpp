#include "headrace/staging/host_to_device_copies.hpp"

namespace headrace::staging {
namespace {

static_assert(sizeof(gpu::Memcpy2D) == 128, "gpu::Memcpy2D must have gpu::CUDA_MEMCPY2D's layout");

// cuMemcpy2D refuses pitches above the device's CU_DEVICE_ATTRIBUTE_MAX_PITCH (2^31 - 1 on the GPUs
// we know); rows further apart than this stay separate copies.
constexpr std::uint64_t most_pitch = std::uint64_t{1} << 30;

gpu::CUdeviceptr driver_allocation_end(gpu::CUdeviceptr address) {
  gpu::CUdeviceptr base = 0;
  std::size_t size = 0;
  gpu::check(gpu::require_driver().cuMemGetAddressRange(&base, &size, address), "cuMemGetAddressRange");
  return base + size;
}

}  // namespace

HostToDeviceCopies::HostToDeviceCopies() : allocation_end_(driver_allocation_end) {}
HostToDeviceCopies::HostToDeviceCopies(AllocationEnd allocation_end) : allocation_end_(std::move(allocation_end)) {}

bool HostToDeviceCopies::same_allocation(Copy& run, gpu::CUdeviceptr destination, std::uint64_t size) {
  if (run.destination_end == 0) run.destination_end = allocation_end_(run.destination);
  return destination + size <= run.destination_end;
}

void HostToDeviceCopies::add(gpu::CUdeviceptr destination, const std::byte* source, std::uint64_t size,
                             const std::byte* source_end) {
  if (size == 0) return;
  if (!runs_.empty() && runs_.back().source_end == source_end) {
    Copy& last = runs_.back();
    if (last.rows == 1 && last.source + last.size == source && last.destination + last.size == destination &&
        same_allocation(last, destination, size)) {
      last.size += size;
      return;
    }
    if (size == last.size && last.rows == 1 && source > last.source && destination > last.destination) {
      const auto source_pitch = static_cast<std::uint64_t>(source - last.source);
      const std::uint64_t destination_pitch = destination - last.destination;
      if (source_pitch >= size && destination_pitch >= size && source_pitch <= most_pitch && destination_pitch <= most_pitch &&
          same_allocation(last, destination, size)) {
        last.rows = 2;
        last.source_pitch = source_pitch;
        last.destination_pitch = destination_pitch;
        return;
      }
    }
    if (size == last.size && last.rows > 1 && source == last.source + last.rows * last.source_pitch &&
        destination == last.destination + last.rows * last.destination_pitch && same_allocation(last, destination, size)) {
      ++last.rows;
      return;
    }
  }
  runs_.push_back({destination, source, size, 1, 0, 0, source_end, 0});
}

void HostToDeviceCopies::issue(gpu::CUstream stream) const {
  const gpu::CudaDriver& cuda = gpu::require_driver();
  for (const Copy& copy : runs_) {
    if (copy.rows == 1) {
      gpu::check(cuda.cuMemcpyHtoDAsync(copy.destination, copy.source, copy.size, stream), "cuMemcpyHtoDAsync");
      continue;
    }
    gpu::Memcpy2D rows;
    rows.src_memory_type = gpu::memorytype_host;
    rows.src_host = copy.source;
    rows.src_pitch = copy.source_pitch;
    rows.dst_memory_type = gpu::memorytype_device;
    rows.dst_device = copy.destination;
    rows.dst_pitch = copy.destination_pitch;
    rows.width_bytes = copy.size;
    rows.height = copy.rows;
    gpu::check(cuda.cuMemcpy2DAsync(&rows, stream), "cuMemcpy2DAsync");
  }
}

}  // namespace headrace::staging
