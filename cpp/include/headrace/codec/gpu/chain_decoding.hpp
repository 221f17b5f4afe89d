// Decoding chunks of codec chains on a GPU: nvCOMP decodes the blocks of a batch of chunks of one coding
// at once, then each chunk's filters are undone by the filter kernels, in reverse order, on the same
// stream. A chunk with filters decodes where its last filter undone does not write: into the spare
// buffer (its chunks packed at 256-byte offsets) when an odd number of its filters work out of place,
// else into its destination.
#pragma once

#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "headrace/codec/chain.hpp"
#include "headrace/codec/gpu/batched_decoder.hpp"
#include "headrace/codec/gpu/filters.hpp"

namespace headrace::codec::gpu {

// One chunk: its stored bytes in device memory and on the host (where its block table is read), its
// destination and its chain.
struct ChainChunk {
  headrace::gpu::CUdeviceptr stored = 0;
  std::span<const std::byte> stored_host;
  headrace::gpu::CUdeviceptr raw = 0;
  std::uint64_t raw_size = 0;
  const Chain* chain = nullptr;
  std::string_view label;  // names it in errors
};

// What nvCOMP decodes for a batch of chunks: an item per block (items' raw addresses are offsets in
// their chunk until decode_chains_async places them), the chunk of each item, and the spare bytes the
// filters need.
struct ChainBatch {
  static constexpr std::uint64_t no_spare = std::numeric_limits<std::uint64_t>::max();
  std::vector<DecodeItem> items;
  std::vector<std::size_t> chunk_of_item;
  std::vector<std::string> labels;         // per item: the chunk's label and the block
  std::vector<std::uint64_t> spare_offset;  // per chunk, or no_spare when it has no filters
  std::uint64_t spare_bytes = 0;
};

// Reads each chunk's block table; throws CodecError starting with the chunk's label for one that does
// not fit.
[[nodiscard]] ChainBatch plan_chain_batch(std::span<const ChainChunk> chunks);

// Enqueues the batch on the stream: nvCOMP (decoder's coding must be every chunk's codec's), then the
// filters. kernels and spare (at least batch.spare_bytes) may be null when no chain has filters. Check
// it with decoder.check()/failures() and batch.labels; the filters have run once the stream has passed.
void decode_chains_async(BatchedDecoder& decoder, const FilterKernels* kernels, std::span<const ChainChunk> chunks,
                         const ChainBatch& batch, headrace::gpu::CUdeviceptr spare, headrace::gpu::CUstream stream);

}  // namespace headrace::codec::gpu
