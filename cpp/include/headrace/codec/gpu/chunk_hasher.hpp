// XXH3-64 of chunks already in GPU memory, as the container's checksums are (format/checksum.hpp), on the
// caller's stream: what a copy of a plain chunk can be checked by where it landed, at the GPU's memory
// rate, instead of by the host beside the DMA (docs/engine.md). Chunks of more than 240 bytes at
// addresses that are multiples of 8; the library's own sum for the rest.
#pragma once

#include <cstdint>
#include <span>

#include "headrace/gpu/device.hpp"
#include "headrace/gpu/kernel_module.hpp"
#include "headrace/gpu/memory.hpp"

namespace headrace::codec::gpu {

class ChunkHasher {
 public:
  struct Chunk {
    headrace::gpu::CUdeviceptr address = 0;
    std::uint64_t length = 0;
  };
  // Whether the GPU hashes a chunk (long enough, aligned) or the host must.
  [[nodiscard]] static bool hashes(const Chunk& chunk) noexcept;

  // Loads the kernels on `device`. Throws UnavailableError without a GPU or without the kernels.
  explicit ChunkHasher(int device);

  // The hash of each chunk into hashes[i] (device memory, or host memory the GPU can write), enqueued on
  // `stream`: in stream order after what put the chunks there. The block sums live in the hasher's
  // scratch, reused in stream order: one stream a hasher. Throws UsageError for a chunk hashes() refuses.
  void hash(std::span<const Chunk> chunks, headrace::gpu::CUdeviceptr hashes, headrace::gpu::CUstream stream);

 private:
  headrace::gpu::Device device_;
  headrace::gpu::KernelModule module_;
  headrace::gpu::CUfunction block_sums_, finish_;
  headrace::gpu::DeviceBuffer sums_;
};

}  // namespace headrace::codec::gpu
