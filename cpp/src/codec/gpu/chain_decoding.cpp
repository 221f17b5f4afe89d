#include "headrace/codec/gpu/chain_decoding.hpp"

#include <algorithm>
#include <vector>

#include "headrace/error.hpp"

namespace headrace::codec::gpu {
namespace {

std::uint64_t spare_room(std::uint64_t raw_size) { return (raw_size + 255) / 256 * 256; }

bool odd_out_of_place(const Chain& chain) {
  const auto count = std::count_if(chain.filters().begin(), chain.filters().end(),
                                   [](const auto& filter) { return !filter->undoes_in_place(); });
  return count % 2 == 1;
}

}  // namespace

std::uint64_t spare_bytes_for(std::span<const DecodeItem> items, std::span<const Chain* const> chains) {
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < items.size(); ++i)
    if (!chains[i]->filters().empty()) bytes += spare_room(items[i].raw_size);
  return bytes;
}

void decode_chains_async(BatchedDecoder& decoder, const FilterKernels* kernels, std::span<const DecodeItem> items,
                         std::span<const Chain* const> chains, headrace::gpu::CUdeviceptr spare, headrace::gpu::CUstream stream) {
  HEADRACE_EXPECT(items.size() == chains.size(), UsageError, "decode_chains_async: one chain per item");
  std::vector<DecodeItem> decoded(items.begin(), items.end());
  std::vector<headrace::gpu::CUdeviceptr> spares(items.size(), 0);
  std::uint64_t used = 0;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (chains[i]->filters().empty()) continue;
    HEADRACE_EXPECT(kernels != nullptr && spare != 0, UsageError,
                    "decode_chains_async: chain " + chains[i]->spec() + " has filters: give the kernels and a spare buffer");
    spares[i] = spare + used;
    used += spare_room(items[i].raw_size);
    if (odd_out_of_place(*chains[i])) decoded[i].raw = spares[i];
  }
  decoder.decode_async(decoded, stream);
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Chain& chain = *chains[i];
    if (chain.filters().empty()) continue;
    const headrace::gpu::CUdeviceptr destination = items[i].raw;
    headrace::gpu::CUdeviceptr current = decoded[i].raw;
    for (auto filter = chain.filters().rbegin(); filter != chain.filters().rend(); ++filter) {
      if ((*filter)->undoes_in_place()) {
        (*filter)->undo_on_gpu(*kernels, current, current, items[i].raw_size, stream);
        continue;
      }
      const headrace::gpu::CUdeviceptr other = current == destination ? spares[i] : destination;
      (*filter)->undo_on_gpu(*kernels, current, other, items[i].raw_size, stream);
      current = other;
    }
  }
}

}  // namespace headrace::codec::gpu
