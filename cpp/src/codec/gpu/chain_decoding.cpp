#include "headrace/codec/gpu/chain_decoding.hpp"

#include <algorithm>

#include "headrace/error.hpp"

namespace headrace::codec::gpu {
namespace {

bool odd_out_of_place(const Chain& chain) {
  const auto count = std::count_if(chain.filters().begin(), chain.filters().end(),
                                   [](const auto& filter) { return !filter->undoes_in_place(); });
  return count % 2 == 1;
}

}  // namespace

ChainBatch plan_chain_batch(std::span<const ChainChunk> chunks) {
  ChainBatch batch;
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const ChainChunk& chunk = chunks[c];
    const std::string label(chunk.label);
    const auto blocks = chunk.chain->codec()->blocks(chunk.stored_host, chunk.raw_size, label);
    for (std::size_t b = 0; b < blocks.size(); ++b) {
      batch.items.push_back({chunk.stored + blocks[b].stored_offset, blocks[b].stored_size, blocks[b].raw_offset, blocks[b].raw_size});
      batch.chunk_of_item.push_back(c);
      batch.labels.push_back(blocks.size() == 1 ? label : label + ": block " + std::to_string(b));
    }
    if (chunk.chain->filters().empty()) {
      batch.spare_offset.push_back(ChainBatch::no_spare);
      continue;
    }
    batch.spare_offset.push_back(batch.spare_bytes);
    batch.spare_bytes += (chunk.raw_size + 255) / 256 * 256;
  }
  return batch;
}

void decode_chains_async(BatchedDecoder& decoder, const FilterKernels* kernels, std::span<const ChainChunk> chunks,
                         const ChainBatch& batch, headrace::gpu::CUdeviceptr spare, headrace::gpu::CUstream stream) {
  HEADRACE_EXPECT(batch.spare_bytes == 0 || (kernels != nullptr && spare != 0), UsageError,
                  "decode_chains_async: chains with filters need the filter kernels and a spare buffer");
  // Where each chunk's codec writes: its destination, or its place in the spare buffer.
  std::vector<headrace::gpu::CUdeviceptr> spares(chunks.size(), 0), targets(chunks.size(), 0);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    targets[c] = chunks[c].raw;
    if (batch.spare_offset[c] == ChainBatch::no_spare) continue;
    spares[c] = spare + batch.spare_offset[c];
    if (odd_out_of_place(*chunks[c].chain)) targets[c] = spares[c];
  }
  std::vector<DecodeItem> items = batch.items;
  for (std::size_t i = 0; i < items.size(); ++i) items[i].raw += targets[batch.chunk_of_item[i]];
  decoder.decode_async(items, stream);
  for (std::size_t c = 0; c < chunks.size(); ++c) {
    const Chain& chain = *chunks[c].chain;
    const headrace::gpu::CUdeviceptr destination = chunks[c].raw;
    headrace::gpu::CUdeviceptr current = targets[c];
    for (auto filter = chain.filters().rbegin(); filter != chain.filters().rend(); ++filter) {
      if ((*filter)->undoes_in_place()) {
        (*filter)->undo_on_gpu(*kernels, current, current, chunks[c].raw_size, stream);
        continue;
      }
      const headrace::gpu::CUdeviceptr other = current == destination ? spares[c] : destination;
      (*filter)->undo_on_gpu(*kernels, current, other, chunks[c].raw_size, stream);
      current = other;
    }
  }
}

}  // namespace headrace::codec::gpu
