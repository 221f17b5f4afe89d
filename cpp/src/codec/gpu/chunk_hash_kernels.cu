// XXH3-64 of chunks in GPU memory (format/xxh3_lanes.hpp holds the math, shared with the CPU reference):
// every block's lane sums at once, then each lane alone through its blocks, the 8 lanes merged by
// shuffles. Built into a fatbin by nvcc and loaded through the driver at run time.
#include "headrace/codec/gpu/chunk_hashes_shared.hpp"

namespace cg = headrace::codec::gpu;
namespace hf = headrace::format;

namespace {

__device__ unsigned chunk_of(const cg::HashedChunks& chunks, unsigned long long block) {
  unsigned lo = 0, hi = chunks.count;  // the last chunk whose first block is at or before `block`
  while (hi - lo > 1) {
    const unsigned mid = (lo + hi) / 2;
    if (chunks.first_block[mid] <= block) lo = mid;
    else hi = mid;
  }
  return lo;
}

// A word of a chunk at any byte offset (the last stripe starts anywhere), little-endian.
__device__ std::uint64_t word_at(const unsigned char* bytes) {
  std::uint64_t w = 0;
  for (int i = 7; i >= 0; --i) w = (w << 8) | bytes[i];
  return w;
}

}  // namespace

// A thread per (block, lane): what the block's stripes add to the lane.
extern "C" __global__ void headrace_xxh3_block_sums(const cg::HashedChunks chunks, const hf::Xxh3Keys keys, std::uint64_t* sums) {
  const unsigned long long t = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const unsigned long long block = t / 8;
  const unsigned lane = static_cast<unsigned>(t % 8);
  if (block >= chunks.blocks) return;
  const unsigned c = chunk_of(chunks, block);
  const unsigned long long local = block - chunks.first_block[c];
  const hf::Xxh3Blocks blocks = hf::xxh3_blocks(chunks.length[c]);
  const auto* words = reinterpret_cast<const std::uint64_t*>(chunks.address[c]) + local * (hf::xxh3_block_bytes / 8);
  sums[block * 8 + lane] = hf::xxh3_lane_sum(keys, words, local < blocks.whole ? hf::xxh3_block_stripes : blocks.last_stripes, lane);
}

// Eight threads a chunk, a lane each, through its blocks; the first of the eight writes the hash.
extern "C" __global__ void headrace_xxh3_finish(const cg::HashedChunks chunks, const hf::Xxh3Keys keys, const std::uint64_t* sums,
                                                std::uint64_t* hashes) {
  const unsigned long long t = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const unsigned c = static_cast<unsigned>(t / 8), lane = static_cast<unsigned>(t % 8);
  std::uint64_t acc = 0;
  if (c < chunks.count) {
    const std::uint64_t length = chunks.length[c];
    const hf::Xxh3Blocks blocks = hf::xxh3_blocks(length);
    const std::uint64_t* mine = sums + chunks.first_block[c] * 8 + lane;
    acc = hf::xxh3_init(lane);
    for (std::uint64_t b = 0; b < blocks.whole; ++b) acc = hf::xxh3_scramble(keys, acc + mine[b * 8], lane);
    acc += mine[blocks.whole * 8];
    const auto* last = reinterpret_cast<const unsigned char*>(chunks.address[c]) + length - hf::xxh3_stripe_bytes;
    std::uint64_t words[8] = {};
    words[lane] = word_at(last + 8 * lane);
    words[lane ^ 1u] = word_at(last + 8 * (lane ^ 1u));
    acc += hf::xxh3_last_stripe(keys, words, lane);
  }
  // Every thread of the warp shuffles (chunks past the count carry zeros), so the mask is whole.
  std::uint64_t lanes[8];
  const unsigned first = (threadIdx.x % 32) & ~7u;
  for (unsigned i = 0; i < 8; ++i) lanes[i] = __shfl_sync(0xffffffffu, acc, first + i);
  if (c < chunks.count && lane == 0) hashes[c] = hf::xxh3_finish(keys, lanes, chunks.length[c]);
}
