// GPU decompression of a batch of chunks through nvCOMP's batched API (docs/codecs/): chunks already
// in device memory are decoded into their device destinations in one launch on a stream; check()
// then names the first chunk that failed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "headrace/codec/stage.hpp"
#include "headrace/gpu/cuda_driver.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/stream.hpp"
#include "headrace/shim/nvcomp.hpp"

namespace headrace::codec::gpu {

// One chunk: stored bytes in device memory decode into raw_size bytes at raw.
struct DecodeItem {
  headrace::gpu::CUdeviceptr stored = 0;
  std::size_t stored_size = 0;
  headrace::gpu::CUdeviceptr raw = 0;
  std::size_t raw_size = 0;
};

// What one batch may hold; the decoder sizes nvCOMP's temp buffer and its arrays for it. nvCOMP 6.0's
// zstd temp buffer is about 3 x max_total_raw_bytes (195 MiB for 64 MiB); lz4 and gdeflate need none.
struct BatchedDecoderLimits {
  std::size_t max_chunks = 1024;                             // items per decode_async
  std::size_t max_raw_chunk_bytes = std::size_t{4} << 20;    // the largest raw_size
  std::size_t max_total_raw_bytes = std::size_t{64} << 20;   // the sum of raw_size over a batch
};

// What one batched decoder decodes: an nvCOMP algorithm with its decompression options (the decoder
// sets the backend), named for messages by its stage ("zstd(level=3)").
struct NvcompCoding {
  shim::NvcompAlgorithm algorithm = shim::NvcompAlgorithm::lz4;
  shim::NvcompOptions options;
  std::string name;
  [[nodiscard]] static NvcompCoding of(const CodecStage& stage);
  // Decoders are shared by what they decode, whatever the stage's encoding-only values (a level).
  friend bool operator<(const NvcompCoding& a, const NvcompCoding& b) noexcept {
    return a.algorithm != b.algorithm ? a.algorithm < b.algorithm : a.options < b.options;
  }
  friend bool operator==(const NvcompCoding& a, const NvcompCoding& b) noexcept {
    return a.algorithm == b.algorithm && a.options == b.options;
  }
};

// Whether the coding can be decoded on the GPU here (nvCOMP 6 with its entry points, a CUDA driver and
// a GPU); when not, *why says what is missing.
[[nodiscard]] bool gpu_decoder_available(const NvcompCoding& coding, std::string* why);

// Decodes batches of one codec on the GPU. It owns nvCOMP's temp buffer, the device arrays of chunk
// pointers, sizes and statuses, and their pinned host mirror.
//
// One decoder serves one stream at a time, one batch at a time: decode_async(), then check() once the
// stream may have passed the batch (check() waits for it), then the next decode_async(), which may be
// on another stream. A pipeline that keeps several batches in flight uses one decoder per batch.
//
// Construct it with the GPU's context current on the calling thread (gpu::Device makes it current).
// Decoding uses nvCOMP's CUDA backend, never the hardware decompression engine, because only the CUDA
// kernels report corrupt input per chunk (the engine leaves undefined results and reports success).
class BatchedDecoder {
 public:
  // Throws UsageError for limits that are zero or beyond nvCOMP's, UnavailableError (naming what is
  // missing) when gpu_decoder_available() is false, GpuOutOfMemoryError with the size.
  BatchedDecoder(NvcompCoding coding, const BatchedDecoderLimits& limits);
  // Waits for a batch still in flight before freeing the memory it uses.
  ~BatchedDecoder() noexcept;
  BatchedDecoder(BatchedDecoder&& other) noexcept;
  BatchedDecoder& operator=(BatchedDecoder&&) = delete;
  BatchedDecoder(const BatchedDecoder&) = delete;
  BatchedDecoder& operator=(const BatchedDecoder&) = delete;

  // Enqueues on stream: the upload of the chunk arrays (from pinned memory), the batched decompression,
  // and the download of the statuses and decoded sizes. Every stored and raw address must be aligned to
  // alignments() (4096-aligned staging always is). The stored bytes must be in place on the stream
  // before it, and must stay, like the raw destinations, until the stream has passed the batch.
  // Throws UsageError for a batch beyond the limits, a misaligned address or an unchecked previous
  // batch; CudaError when an enqueue fails; CodecError when nvCOMP refuses to launch.
  void decode_async(std::span<const DecodeItem> items, headrace::gpu::CUstream stream);

  // Waits until the stream has passed the last batch, then throws CodecError naming labels[i] of the
  // first chunk whose status is not success or whose decoded size differs from its raw_size (and how
  // many others failed). labels has one entry per item of the batch, e.g.
  // "data.hrc: offset 8192: frame 3 field 'particles' chunk 12".
  void check(std::span<const std::string> labels);
  // Like check(), but one message per chunk (empty when it decoded), so a caller can fail exactly the
  // chunks that failed.
  [[nodiscard]] std::vector<std::string> failures(std::span<const std::string> labels);

  [[nodiscard]] const NvcompCoding& coding() const noexcept { return coding_; }
  [[nodiscard]] const BatchedDecoderLimits& limits() const noexcept { return limits_; }
  // nvCOMP's minimum alignments for this codec, as it reports them.
  [[nodiscard]] const shim::NvcompAlignments& alignments() const noexcept { return alignments_; }
  [[nodiscard]] std::size_t temp_bytes() const noexcept { return temp_.size_bytes(); }

 private:
  NvcompCoding coding_;
  BatchedDecoderLimits limits_;
  const shim::Nvcomp* nvcomp_ = nullptr;
  const shim::NvcompDecompressApi* api_ = nullptr;
  shim::NvcompAlignments alignments_;
  headrace::gpu::DeviceBuffer temp_;
  headrace::gpu::DeviceBuffer arrays_;          // the per-chunk arrays nvCOMP reads and writes
  headrace::gpu::PinnedBuffer arrays_mirror_;   // their host copy, same layout
  headrace::gpu::Event done_;                   // recorded after the download of a batch's results
  std::size_t pending_items_ = 0;
  bool pending_ = false;                        // a batch was enqueued and not yet checked
};

}  // namespace headrace::codec::gpu
