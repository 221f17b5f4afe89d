#include "headrace/workloads/volume/layer_compositor.hpp"

#include <algorithm>

#include "headrace/error.hpp"
#include "headrace/workloads/common/frame_buffer.hpp"
#include "headrace/workloads/common/image_bands.hpp"
#include "volume_kernel_image.hpp"

namespace headrace::workloads::volume {
namespace {

using common::PixelRun;
constexpr unsigned composite_threads = 256;
constexpr std::uint64_t layer_pixel_bytes = 4 * sizeof(float), colour_bytes = sizeof(std::uint32_t);

}  // namespace

LayerCompositor::LayerCompositor(const gpu::Communicator& communicator, const Camera& camera, std::uint32_t background)
    : communicator_(communicator),
      module_((communicator.gpu().make_current(), volume_kernel_image()), "the volume renderer's kernels (volume_kernels.cu)",
              "composite on the host instead"),
      composite_(module_.function("headrace_volume_composite")),
      camera_(camera),
      background_(background) {
  const int ranks = communicator.size();
  const std::uint64_t stride = common::direct_send_band(0, ranks, camera.width, camera.height).count;  // the widest band
  received_ = gpu::DeviceBuffer(std::max<std::uint64_t>(stride * ranks * layer_pixel_bytes, 16));
  band_ = gpu::DeviceBuffer(std::max<std::uint64_t>(stride * colour_bytes, 4));
  if (communicator.rank() == 0) image_ = gpu::DeviceBuffer(static_cast<std::uint64_t>(camera.width) * camera.height * colour_bytes);
}

std::vector<std::uint32_t> LayerCompositor::composite(gpu::CUdeviceptr layer, gpu::CUstream stream) {
  const int ranks = communicator_.size(), rank = communicator_.rank();
  const std::int32_t width = camera_.width, height = camera_.height;
  const PixelRun mine = common::direct_send_band(rank, ranks, width, height);
  const std::uint64_t stride = common::direct_send_band(0, ranks, width, height).count;
  communicator_.gpu().make_current();
  std::vector<gpu::Transfer> transfers;
  for (int peer = 0; peer < ranks; ++peer) {
    const PixelRun theirs = common::direct_send_band(peer, ranks, width, height);
    transfers.push_back({peer, layer + theirs.first * layer_pixel_bytes, theirs.count * layer_pixel_bytes,
                         received_.pointer() + peer * stride * layer_pixel_bytes, mine.count * layer_pixel_bytes});
  }
  communicator_.exchange(transfers, stream);
  // Rank 0 composites straight into its place in the image; the others into a band sent on to it.
  const gpu::CUdeviceptr out = rank == 0 ? image_.pointer() + mine.first * colour_bytes : band_.pointer();
  if (mine.count != 0) {
    const auto* layers = reinterpret_cast<const float*>(received_.pointer());
    std::int32_t count = ranks;
    std::uint64_t stride_floats = stride * 4, pixels = mine.count;
    Camera camera = camera_;
    auto first_row = static_cast<std::int32_t>(mine.first / static_cast<std::uint64_t>(width));
    std::uint32_t background = background_;
    auto* rgba = reinterpret_cast<std::uint32_t*>(out);
    void* args[] = {&layers, &count, &stride_floats, &camera, &first_row, &pixels, &background, &rgba};
    gpu::launch_1d(composite_, pixels, composite_threads, stream, args);
  }
  transfers.clear();
  if (rank == 0) {
    for (int peer = 1; peer < ranks; ++peer) {
      const PixelRun theirs = common::direct_send_band(peer, ranks, width, height);
      transfers.push_back({peer, 0, 0, image_.pointer() + theirs.first * colour_bytes, theirs.count * colour_bytes});
    }
  } else {
    transfers.push_back({0, out, mine.count * colour_bytes, 0, 0});
  }
  communicator_.exchange(transfers, stream);
  if (rank != 0) {
    gpu::check(gpu::require_driver().cuStreamSynchronize(stream), "cuStreamSynchronize");
    return {};
  }
  return read_back_.read<std::uint32_t>(communicator_.gpu(), image_, static_cast<std::uint64_t>(width) * height, stream);
}

}  // namespace headrace::workloads::volume
