// The GPU tracer's round kernels, one thread per half-line (resident_lines.hpp holds the work, shared
// with the host executor). Built into a fatbin by nvcc and loaded through the driver at run time, so
// the library needs no CUDA runtime. -fmad=false (CMakeLists.txt): no fused multiply-adds, which the
// CPU build does not use either, so both round the same way and trace the same points.
#include "headrace/workloads/streamlines/resident_lines.hpp"

namespace hs = headrace::workloads::streamlines;

template <typename Units>
__device__ void advance_all(const hs::RoundParams<Units>& params) {
  const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < params.line_count) hs::advance_resident_line(params, i);
}

extern "C" __global__ void headrace_advance_blocks(hs::RoundParams<hs::BlockLayout> params) { advance_all(params); }
extern "C" __global__ void headrace_advance_hilbert(hs::RoundParams<hs::HilbertUnits> params) { advance_all(params); }
extern "C" __global__ void headrace_gather_points(hs::GatherParams params, std::uint64_t total) {
  const std::uint64_t k = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < total) hs::gather_point(params, k);
}
