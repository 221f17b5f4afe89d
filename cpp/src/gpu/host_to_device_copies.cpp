#include "headrace/gpu/host_to_device_copies.hpp"

namespace headrace::gpu {

void HostToDeviceCopies::add(CUdeviceptr destination, const std::byte* source, std::uint64_t size) {
  if (size == 0) return;
  if (!runs_.empty()) {
    Copy& last = runs_.back();
    if (last.source + last.size == source && last.destination + last.size == destination) {
      last.size += size;
      return;
    }
  }
  runs_.push_back({destination, source, size});
}

void HostToDeviceCopies::issue(CUstream stream) const {
  const CudaDriver& cuda = require_driver();
  for (const Copy& copy : runs_)
    check(cuda.cuMemcpyHtoDAsync(copy.destination, copy.source, copy.size, stream), "cuMemcpyHtoDAsync");
}

}  // namespace headrace::gpu
