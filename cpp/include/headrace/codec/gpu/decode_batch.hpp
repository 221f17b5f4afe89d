// The chunks of a batch decoded on a GPU, planned once: grouped by the nvCOMP coding of their codec,
// each group cut into parts within a decoder's limits (whole chunks to a part: a chunk's filters follow
// its last block), each chunk's blocks read from its block table when it is added. issue() hands each
// part a pooled decoder (and a spare buffer when a chain of it has filters) and enqueues it on a stream
// (codec/gpu/chain_decoding.hpp); once the stream has passed, failures() names each chunk that failed
// and give_back() returns the decoders.
#pragma once

#include <cstddef>
#include <exception>
#include <map>
#include <memory>
#include <vector>

#include "headrace/codec/gpu/batched_decoder.hpp"
#include "headrace/codec/gpu/chain_decoding.hpp"
#include "headrace/codec/gpu/decoder_pool.hpp"

namespace headrace::codec::gpu {

class DecodeBatch {
 public:
  // What one decoder decodes at once: whole chunks of one coding.
  struct Part {
    NvcompCoding coding;
    std::vector<ChainChunk> chunks;
    std::vector<std::size_t> chunk_numbers;  // per chunk: its number in the batch (the order of add())
    ChainBatch blocks;                       // nvCOMP's items and the filters' spare bytes
    std::shared_ptr<DecoderPool::Pooled> decoder;  // taken by issue()
    std::shared_ptr<headrace::gpu::DeviceBuffer> spare;
  };

  DecodeBatch() = default;
  explicit DecodeBatch(const BatchedDecoderLimits& limits) : limits_(limits) {}

  // Reads the chunk's block table and places it in the last part of its coding, or a new part when that
  // one would pass the limits. Throws CodecError starting with the chunk's label for a block table that
  // does not fit (the chunk is not added). Returns its number in the batch.
  std::size_t add(const ChainChunk& chunk);
  [[nodiscard]] std::size_t chunk_count() const noexcept { return chunk_count_; }
  // The parts, by coding, each coding's in the order they were opened.
  [[nodiscard]] const std::map<NvcompCoding, std::vector<Part>>& parts() const noexcept { return parts_; }

  // Takes a decoder (waiting for an idle one) and a spare buffer where needed for each part and enqueues
  // it on the stream. The chunks' stored bytes must be in place on the stream before it.
  void issue(DecoderPool& pool, headrace::gpu::CUstream stream);
  // Once the stream has passed the batch: per chunk (by number), why it failed, or null.
  [[nodiscard]] std::vector<std::exception_ptr> failures();
  // Returns the decoders and spare buffers issue() took (after failures(), or after a failed issue once the
  // stream has passed what was issued).
  void give_back(DecoderPool& pool);

 private:
  BatchedDecoderLimits limits_;
  std::map<NvcompCoding, std::vector<Part>> parts_;
  std::size_t chunk_count_ = 0;
};

}  // namespace headrace::codec::gpu
