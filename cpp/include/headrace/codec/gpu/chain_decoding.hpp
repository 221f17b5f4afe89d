// Decoding chunks of codec chains on a GPU: nvCOMP decodes a batch of one coding, then each chunk's
// filters are undone by the filter kernels, in reverse order, on the same stream. A chunk with filters
// decodes where its last filter undone does not write: into `spare` (its chunks packed at 256-byte
// offsets) when an odd number of its filters work out of place, else into its destination.
#pragma once

#include <span>

#include "headrace/codec/chain.hpp"
#include "headrace/codec/gpu/batched_decoder.hpp"
#include "headrace/codec/gpu/filters.hpp"

namespace headrace::codec::gpu {

// The spare bytes decode_chains_async needs for these chunks (0 when no chain has filters).
[[nodiscard]] std::uint64_t spare_bytes_for(std::span<const DecodeItem> items, std::span<const Chain* const> chains);

// Enqueues the batch on the stream; items[i] is stored by chains[i], whose codec is the decoder's coding.
// kernels may be null when no chain has filters. Check the batch with decoder.check()/failures().
void decode_chains_async(BatchedDecoder& decoder, const FilterKernels* kernels, std::span<const DecodeItem> items,
                         std::span<const Chain* const> chains, headrace::gpu::CUdeviceptr spare, headrace::gpu::CUstream stream);

}  // namespace headrace::codec::gpu
