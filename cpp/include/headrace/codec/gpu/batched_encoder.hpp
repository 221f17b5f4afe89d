// GPU compression of a batch of host chunks through nvCOMP's batched API: what writes the codecs that
// only a GPU encodes (ans, cascaded) and what `headrace compress --auto` times. Blocking: it uploads,
// compresses and downloads on a stream of its own.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "headrace/codec/stage.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/stream.hpp"

namespace headrace::codec::gpu {

// Whether nvCOMP can encode the stage on a GPU here; when not, *why says what is missing.
[[nodiscard]] bool gpu_encoder_available(const CodecStage& stage, std::string* why);

class BatchedEncoder {
 public:
  // Up to max_chunks chunks of at most max_raw_chunk_bytes each, on GPU `device`. Throws
  // UnavailableError naming what is missing, UsageError for a chunk size past nvCOMP's limit.
  BatchedEncoder(const CodecStage& stage, int device, std::size_t max_chunks, std::size_t max_raw_chunk_bytes);

  // The stored bytes of each chunk. Throws CodecError naming the chunk nvCOMP could not compress.
  [[nodiscard]] std::vector<std::vector<std::byte>> encode(std::span<const std::span<const std::byte>> chunks);
  // Seconds the last encode() spent in nvCOMP's kernels (CUDA events around the launch).
  [[nodiscard]] double last_kernel_seconds() const noexcept { return kernel_seconds_; }
  [[nodiscard]] std::size_t max_chunks() const noexcept { return max_chunks_; }

 private:
  std::string name_;
  headrace::gpu::Device device_;
  const shim::NvcompCompressApi* api_;
  shim::NvcompOptions options_;
  std::size_t max_chunks_, max_raw_, max_stored_ = 0;
  headrace::gpu::Stream stream_;
  headrace::gpu::DeviceBuffer raw_, stored_, temp_, arrays_;
  headrace::gpu::PinnedBuffer mirror_;
  double kernel_seconds_ = 0;
};

// The stored bytes of each chunk through the stage, its blocks encoded by `encoder` (made for this
// stage, with room for blocks of the stage's block size) in batches, joined with their table.
[[nodiscard]] std::vector<std::vector<std::byte>> encode_chunks(BatchedEncoder& encoder, const CodecStage& stage,
                                                                std::span<const std::span<const std::byte>> chunks);

}  // namespace headrace::codec::gpu
