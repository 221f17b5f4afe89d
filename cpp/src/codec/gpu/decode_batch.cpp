#include "headrace/codec/gpu/decode_batch.hpp"

#include <numeric>
#include <utility>

#include "headrace/error.hpp"

namespace headrace::codec::gpu {
namespace {

std::uint64_t raw_bytes(const DecodeBatch::Part& part) {
  return std::accumulate(part.chunks.begin(), part.chunks.end(), std::uint64_t{0},
                         [](std::uint64_t total, const ChainChunk& chunk) { return total + chunk.raw_size; });
}

// Appends one chunk's plan to its part's: its items, now of the part's chunk `index`, and its spare bytes.
void append(ChainBatch& blocks, ChainBatch&& chunk_blocks, std::size_t index) {
  for (std::size_t i = 0; i < chunk_blocks.items.size(); ++i) {
    blocks.items.push_back(chunk_blocks.items[i]);
    blocks.chunk_of_item.push_back(index);
    blocks.labels.push_back(std::move(chunk_blocks.labels[i]));
  }
  if (chunk_blocks.spare_offset.front() == ChainBatch::no_spare) {
    blocks.spare_offset.push_back(ChainBatch::no_spare);
    return;
  }
  blocks.spare_offset.push_back(blocks.spare_bytes);
  blocks.spare_bytes += chunk_blocks.spare_bytes;
}

}  // namespace

std::size_t DecodeBatch::add(const ChainChunk& chunk) {
  ChainBatch chunk_blocks = plan_chain_batch({&chunk, 1});
  std::vector<Part>& parts = parts_[NvcompCoding::of(*chunk.chain->codec())];
  const bool fits = !parts.empty() && parts.back().blocks.items.size() + chunk_blocks.items.size() <= limits_.max_chunks &&
                    raw_bytes(parts.back()) + chunk.raw_size <= limits_.max_total_raw_bytes;
  if (!fits) {
    parts.emplace_back();
    parts.back().coding = NvcompCoding::of(*chunk.chain->codec());
  }
  Part& part = parts.back();
  append(part.blocks, std::move(chunk_blocks), part.chunks.size());
  part.chunks.push_back(chunk);
  part.chunk_numbers.push_back(chunk_count_);
  return chunk_count_++;
}

void DecodeBatch::issue(DecoderPool& pool, headrace::gpu::CUstream stream) {
  // Decoders were made at enqueue: the data path only waits for an idle one, it allocates nothing.
  for (auto& [coding, parts] : parts_) {
    for (Part& part : parts) {
      part.decoder = pool.take(coding);
      if (part.blocks.spare_bytes > 0) part.spare = pool.take_spare();
      decode_chains_async(part.decoder->decoder, part.spare ? &pool.filter_kernels() : nullptr, part.chunks, part.blocks,
                          part.spare ? part.spare->pointer() : 0, stream);
    }
  }
}

std::vector<std::exception_ptr> DecodeBatch::failures() {
  std::vector<std::exception_ptr> failed(chunk_count_);
  for (auto& [coding, parts] : parts_) {
    for (Part& part : parts) {
      try {
        const auto messages = part.decoder->decoder.failures(part.blocks.labels);
        for (std::size_t k = 0; k < messages.size(); ++k)
          if (!messages[k].empty())
            failed[part.chunk_numbers[part.blocks.chunk_of_item[k]]] = std::make_exception_ptr(CodecError(messages[k]));
      } catch (const std::exception&) {  // the results could not be read: the part fails
        for (const std::size_t number : part.chunk_numbers) failed[number] = std::current_exception();
      }
    }
  }
  return failed;
}

void DecodeBatch::give_back(DecoderPool& pool) {
  for (auto& [coding, parts] : parts_) {
    for (Part& part : parts) {
      if (part.decoder) pool.give_back(std::move(part.decoder));
      if (part.spare) pool.give_back_spare(std::move(part.spare));
    }
  }
}

}  // namespace headrace::codec::gpu
