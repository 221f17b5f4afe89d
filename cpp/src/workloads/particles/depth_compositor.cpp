#include "headrace/workloads/particles/depth_compositor.hpp"

#include <algorithm>

#include "headrace/error.hpp"
#include "headrace/workloads/common/frame_buffer.hpp"
#include "headrace/workloads/common/image_bands.hpp"
#include "sphere_kernel_image.hpp"

namespace headrace::workloads::particles {
namespace {

using common::PixelRun;
constexpr unsigned merge_threads = 256;
constexpr std::uint64_t key_bytes = sizeof(std::uint64_t), colour_bytes = sizeof(std::uint32_t);

// Grows `buffer` to at least `bytes` (kept across frames: the same image size every frame).
void reserve(gpu::DeviceBuffer& buffer, std::uint64_t bytes) {
  if (buffer.size_bytes() < bytes) buffer = gpu::DeviceBuffer(std::max<std::uint64_t>(bytes, 8));
}

}  // namespace

DepthCompositor::DepthCompositor(const gpu::Communicator& communicator, std::int32_t width, std::int32_t height)
    : communicator_(communicator),
      module_((communicator.gpu().make_current(), sphere_kernel_image()), "the sphere renderer's kernels (sphere_glyphs.cu)",
              "composite on the host instead"),
      merge_(module_.function("headrace_depth_merge")),
      width_(width),
      height_(height) {
  HEADRACE_EXPECT(width > 0 && height > 0, UsageError, "an image of " + std::to_string(width) + " x " + std::to_string(height) + " pixels");
  if (communicator.rank() == 0) image_ = gpu::DeviceBuffer(static_cast<std::uint64_t>(width) * height * colour_bytes);
}

void DepthCompositor::merge(gpu::CUdeviceptr keys, gpu::CUdeviceptr rgba, gpu::CUdeviceptr other_keys, gpu::CUdeviceptr other_rgba,
                            std::int32_t others, std::uint64_t stride, std::uint64_t pixels, gpu::CUdeviceptr out_keys,
                            gpu::CUdeviceptr out_rgba, gpu::CUstream stream) {
  if (pixels == 0) return;
  void* args[] = {&keys, &rgba, &other_keys, &other_rgba, &others, &stride, &pixels, &out_keys, &out_rgba};
  gpu::launch_1d(merge_, pixels, merge_threads, stream, args);
}

std::vector<std::uint32_t> DepthCompositor::composite(gpu::CUdeviceptr keys, gpu::CUdeviceptr rgba, CompositeSchedule schedule,
                                                      gpu::CUstream stream) {
  const int ranks = communicator_.size(), rank = communicator_.rank();
  const std::uint64_t pixels = static_cast<std::uint64_t>(width_) * height_;
  communicator_.gpu().make_current();
  if (ranks == 1) {
    gpu::check(gpu::require_driver().cuMemcpyDtoDAsync(image_.pointer(), rgba, pixels * colour_bytes, stream), "cuMemcpyDtoDAsync");
    return read_back_.read<std::uint32_t>(communicator_.gpu(), image_, pixels, stream);
  }
  if (schedule == CompositeSchedule::direct_send) {
    const PixelRun mine = common::direct_send_band(rank, ranks, width_, height_);
    const std::uint64_t stride = common::direct_send_band(0, ranks, width_, height_).count;  // the widest band
    reserve(received_keys_, stride * ranks * key_bytes);
    reserve(received_rgba_, stride * ranks * colour_bytes);
    std::vector<gpu::Transfer> transfers;
    for (int peer = 0; peer < ranks; ++peer) {
      const PixelRun theirs = common::direct_send_band(peer, ranks, width_, height_);
      transfers.push_back({peer, keys + theirs.first * key_bytes, theirs.count * key_bytes,
                           received_keys_.pointer() + peer * stride * key_bytes, mine.count * key_bytes});
      transfers.push_back({peer, rgba + theirs.first * colour_bytes, theirs.count * colour_bytes,
                           received_rgba_.pointer() + peer * stride * colour_bytes, mine.count * colour_bytes});
    }
    communicator_.exchange(transfers, stream);
    // Rank 0 merges straight into its place in the image; the others into a band sent on to it.
    gpu::CUdeviceptr out = image_.pointer() + mine.first * colour_bytes;
    if (rank != 0) {
      reserve(merged_rgba_, stride * colour_bytes);
      out = merged_rgba_.pointer();
    }
    merge(received_keys_.pointer(), received_rgba_.pointer(), received_keys_.pointer() + stride * key_bytes,
          received_rgba_.pointer() + stride * colour_bytes, ranks - 1, stride, mine.count, 0, out, stream);
    return gather(out, false, stream);
  }
  HEADRACE_EXPECT(common::is_power_of_two(ranks), UsageError,
                  "binary swap composites a power of two ranks, not " + std::to_string(ranks) + " (direct send composites any number)");
  reserve(merged_keys_, pixels * key_bytes);
  reserve(merged_rgba_, pixels * colour_bytes);
  reserve(received_keys_, (pixels + 1) / 2 * key_bytes);
  reserve(received_rgba_, (pixels + 1) / 2 * colour_bytes);
  // The first round reads the caller's image; later ones merge in place in merged_*.
  gpu::CUdeviceptr current_keys = keys, current_rgba = rgba;
  PixelRun run{0, pixels};
  for (int round = 0; (1 << round) < ranks; ++round) {
    const int partner = rank ^ (1 << round);
    const PixelRun kept = common::binary_swap_kept(run, rank, round), given = common::binary_swap_kept(run, partner, round);
    const gpu::Transfer transfers[] = {
        {partner, current_keys + given.first * key_bytes, given.count * key_bytes, received_keys_.pointer(), kept.count * key_bytes},
        {partner, current_rgba + given.first * colour_bytes, given.count * colour_bytes, received_rgba_.pointer(),
         kept.count * colour_bytes}};
    communicator_.exchange(transfers, stream);
    merge(current_keys + kept.first * key_bytes, current_rgba + kept.first * colour_bytes, received_keys_.pointer(),
          received_rgba_.pointer(), 1, 0, kept.count, merged_keys_.pointer() + kept.first * key_bytes,
          merged_rgba_.pointer() + kept.first * colour_bytes, stream);
    current_keys = merged_keys_.pointer(), current_rgba = merged_rgba_.pointer(), run = kept;
  }
  return gather(merged_rgba_.pointer() + run.first * colour_bytes, true, stream);
}

std::vector<std::uint32_t> DepthCompositor::gather(gpu::CUdeviceptr colours, bool binary_swap, gpu::CUstream stream) {
  const int ranks = communicator_.size(), rank = communicator_.rank();
  const std::uint64_t pixels = static_cast<std::uint64_t>(width_) * height_;
  auto run_of = [&](int r) {
    return binary_swap ? common::binary_swap_final(r, ranks, pixels) : common::direct_send_band(r, ranks, width_, height_);
  };
  std::vector<gpu::Transfer> transfers;
  if (rank == 0) {
    for (int peer = 0; peer < ranks; ++peer) {
      const PixelRun theirs = run_of(peer);
      const gpu::CUdeviceptr place = image_.pointer() + theirs.first * colour_bytes;
      if (peer == 0 && place == colours) continue;  // merged in place already
      transfers.push_back({peer, peer == 0 ? colours : 0, peer == 0 ? theirs.count * colour_bytes : 0, place,
                           theirs.count * colour_bytes});
    }
  } else {
    transfers.push_back({0, colours, run_of(rank).count * colour_bytes, 0, 0});
  }
  communicator_.exchange(transfers, stream);
  if (rank != 0) {
    gpu::check(gpu::require_driver().cuStreamSynchronize(stream), "cuStreamSynchronize");
    return {};
  }
  return read_back_.read<std::uint32_t>(communicator_.gpu(), image_, pixels, stream);
}

}  // namespace headrace::workloads::particles
