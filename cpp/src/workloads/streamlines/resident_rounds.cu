// The GPU tracer's kernels: its rounds (a thread a half-line), the lines' velocities, the gather of their
// points and their placing in the seeds' lines (a thread a point), with the seeds'. resident_lines.hpp holds the work,
// shared with the host executor.
// Built into a fatbin by nvcc and loaded through the driver at run time, so the library needs no CUDA
// runtime. -fmad=false (CMakeLists.txt): no fused multiply-adds, which the CPU build does not use
// either, so both round the same way and trace the same points.
#include "headrace/workloads/streamlines/resident_lines.hpp"
#include "headrace/workloads/streamlines/resident_paths.hpp"

namespace hs = headrace::workloads::streamlines;

// Thread i of a 1-D launch does work(i) for i below count.
template <typename Work>
__device__ void per_thread(std::uint64_t count, Work work) {
  const std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) work(i);
}

extern "C" __global__ void headrace_advance_blocks(hs::RoundParams<hs::BlockLayout> params) {
  per_thread(params.line_count, [&](std::uint64_t i) { hs::advance_resident_line(params, i); });
}
extern "C" __global__ void headrace_advance_hilbert(hs::RoundParams<hs::HilbertUnits> params) {
  per_thread(params.line_count, [&](std::uint64_t i) { hs::advance_resident_line(params, i); });
}
extern "C" __global__ void headrace_sample_blocks(hs::SampleParams<hs::BlockLayout> params) {
  per_thread(params.count, [&](std::uint64_t k) { hs::sample_resident_point(params, k); });
}
extern "C" __global__ void headrace_sample_hilbert(hs::SampleParams<hs::HilbertUnits> params) {
  per_thread(params.count, [&](std::uint64_t k) { hs::sample_resident_point(params, k); });
}
extern "C" __global__ void headrace_gather_points(hs::GatherParams params, std::uint64_t total) {
  per_thread(total, [&](std::uint64_t k) { hs::gather_point(params, k); });
}
extern "C" __global__ void headrace_place_points(hs::PlaceParams params, std::uint64_t total) {
  per_thread(total, [&](std::uint64_t k) { hs::place_point(params, k); });
}
// Each seed where its line holds it (the host's place_seeds), in the points the GPU keeps for sampling.
extern "C" __global__ void headrace_place_seeds(const hs::Vec3* seeds, const std::uint64_t* seed_at, std::uint64_t count,
                                                hs::Vec3* points) {
  per_thread(count, [&](std::uint64_t s) { points[seed_at[s]] = seeds[s]; });
}
// The pathline tracer's rounds (resident_paths.hpp) and the placing of its paths' points.
extern "C" __global__ void headrace_advance_paths_blocks(hs::PathRoundParams<hs::BlockLayout> params) {
  per_thread(params.line_count, [&](std::uint64_t i) { hs::advance_resident_path(params, i); });
}
extern "C" __global__ void headrace_advance_paths_hilbert(hs::PathRoundParams<hs::HilbertUnits> params) {
  per_thread(params.line_count, [&](std::uint64_t i) { hs::advance_resident_path(params, i); });
}
extern "C" __global__ void headrace_place_path_points(hs::PathPlaceParams params, std::uint64_t total) {
  per_thread(total, [&](std::uint64_t k) { hs::place_path_point(params, k); });
}
