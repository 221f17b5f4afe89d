// Sort-last compositing of particle images on the GPUs that drew them (issue 37): every rank's depth keys
// and colours exchanged over NCCL (gpu/communicator.hpp) and merged per pixel by depth_merge
// (sphere_glyphs_shared.hpp), the nearer key winning; only the composited image leaves a GPU, on rank 0.
// A key decides a pixel alone, so the image is one renderer's of the whole frame, bit for bit, whichever
// schedule shares the work (workloads/common/image_bands.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "headrace/detail/enum_names.hpp"
#include "headrace/gpu/communicator.hpp"
#include "headrace/gpu/kernel_module.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/workloads/common/frame_buffer.hpp"

namespace headrace::workloads::particles {

// Direct send: one round, every rank sending each other rank its band (every NVLink busy at once);
// binary swap: log2(ranks) rounds of one partner each, half the pixels a round (fewer, larger messages,
// for many ranks or a network between nodes). Binary swap needs a power-of-two number of ranks.
enum class CompositeSchedule : std::uint8_t { direct_send, binary_swap };
inline constexpr detail::EnumNames<CompositeSchedule, 2> composite_schedule_names{
    {{CompositeSchedule::direct_send, "direct-send"}, {CompositeSchedule::binary_swap, "binary-swap"}}};

class DepthCompositor {
 public:
  // For images of width x height on the communicator's GPU; the communicator must outlive it.
  DepthCompositor(const gpu::Communicator& communicator, std::int32_t width, std::int32_t height);

  // This rank's image (width x height keys, uint64, and colours, RGBA8, in GPU memory, drawn on `stream`)
  // composited with every other rank's (all call it together, with the same schedule): the image on rank
  // 0 (row-major RGBA8), empty elsewhere. The caller's buffers are only read.
  [[nodiscard]] std::vector<std::uint32_t> composite(gpu::CUdeviceptr keys, gpu::CUdeviceptr rgba, CompositeSchedule schedule,
                                                     gpu::CUstream stream);

 private:
  void merge(gpu::CUdeviceptr keys, gpu::CUdeviceptr rgba, gpu::CUdeviceptr other_keys, gpu::CUdeviceptr other_rgba,
             std::int32_t others, std::uint64_t stride, std::uint64_t pixels, gpu::CUdeviceptr out_keys, gpu::CUdeviceptr out_rgba,
             gpu::CUstream stream);
  // The owners' runs of the composited image (their colours at `colours`, as each owner holds its run
  // at its place in the image) onto rank 0's image buffer, then read back there.
  [[nodiscard]] std::vector<std::uint32_t> gather(gpu::CUdeviceptr colours, bool binary_swap, gpu::CUstream stream);

  const gpu::Communicator& communicator_;
  gpu::KernelModule module_;
  gpu::CUfunction merge_;
  std::int32_t width_, height_;
  gpu::DeviceBuffer received_keys_, received_rgba_, merged_keys_, merged_rgba_, image_;
  mutable common::FrameReadBack read_back_;  // the frame buffer's way home
};

}  // namespace headrace::workloads::particles
