// Sort-last compositing of volume layers on the GPUs that drew them (issue 37): direct send of bands of
// rows over NCCL (gpu/communicator.hpp, workloads/common/image_bands.hpp), each band composited front to
// back by its owner with composite_slabs (volume_shared.hpp, the math composite_layers runs on the host),
// the bands gathered on rank 0; only the composited image leaves a GPU. Binary swap is not offered: the
// renderer's early end of an opaque ray (alpha 0.99) makes pairwise merging differ from one front-to-back
// pass, and the image would no longer be the host compositing's, bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "headrace/gpu/communicator.hpp"
#include "headrace/gpu/kernel_module.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/workloads/common/frame_buffer.hpp"
#include "headrace/workloads/common/camera.hpp"

namespace headrace::workloads::volume {

using common::Camera;

class LayerCompositor {
 public:
  // For images of the camera (the same on every rank) over `background`; the communicator must outlive it.
  LayerCompositor(const gpu::Communicator& communicator, const Camera& camera, std::uint32_t background);

  // This rank's layer (width x height premultiplied RGBA, float32, in GPU memory, drawn on `stream`; ranks
  // in slab order along z) composited with every other rank's (all call it together): the image on rank
  // 0 (row-major RGBA8), empty elsewhere. The caller's layer is only read.
  [[nodiscard]] std::vector<std::uint32_t> composite(gpu::CUdeviceptr layer, gpu::CUstream stream);

 private:
  const gpu::Communicator& communicator_;
  gpu::KernelModule module_;
  gpu::CUfunction composite_;
  Camera camera_;
  std::uint32_t background_;
  gpu::DeviceBuffer received_, band_, image_;
  mutable common::FrameReadBack read_back_;  // the frame buffer's way home
};

}  // namespace headrace::workloads::volume
