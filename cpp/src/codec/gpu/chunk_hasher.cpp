#include "headrace/codec/gpu/chunk_hasher.hpp"

#include <algorithm>
#include <string>

#include "chunk_hash_kernel_image.hpp"
#include "headrace/codec/gpu/chunk_hashes_shared.hpp"
#include "headrace/error.hpp"
#include "headrace/format/checksum.hpp"

namespace headrace::codec::gpu {
namespace {

constexpr unsigned block_threads = 256;  // a multiple of the warp: the finish shuffles whole warps

}  // namespace

bool ChunkHasher::hashes(const Chunk& chunk) noexcept {
  return chunk.length >= format::xxh3_shortest_long && chunk.address % 8 == 0;
}

ChunkHasher::ChunkHasher(int device)
    : device_(device),
      module_((device_.make_current(), chunk_hash_kernel_image()), "the chunk hash kernels (chunk_hash_kernels.cu)",
              "check the chunks on the host"),
      block_sums_(module_.function("headrace_xxh3_block_sums")),
      finish_(module_.function("headrace_xxh3_finish")) {}

void ChunkHasher::hash(std::span<const Chunk> chunks, headrace::gpu::CUdeviceptr hashes, headrace::gpu::CUstream stream) {
  device_.make_current();
  format::Xxh3Keys keys = format::xxh3_keys();
  for (std::size_t first = 0; first < chunks.size(); first += hashed_chunks_a_launch) {
    HashedChunks launch;
    for (std::size_t i = first; i < std::min(chunks.size(), first + hashed_chunks_a_launch); ++i) {
      HEADRACE_EXPECT(ChunkHasher::hashes(chunks[i]), UsageError,
                      "chunk " + std::to_string(i) + ": the GPU hashes chunks of more than 240 bytes at 8-byte aligned addresses");
      launch.address[launch.count] = chunks[i].address;
      launch.length[launch.count] = chunks[i].length;
      launch.first_block[launch.count] = launch.blocks;
      launch.blocks += summed_blocks(chunks[i].length);
      ++launch.count;
    }
    const std::uint64_t bytes = launch.blocks * 8 * sizeof(std::uint64_t);
    if (sums_.size_bytes() < bytes) {
      // The old sums may still be read by kernels queued before: they finish before it goes.
      headrace::gpu::check(headrace::gpu::require_driver().cuStreamSynchronize(stream), "cuStreamSynchronize");
      sums_ = headrace::gpu::DeviceBuffer();
      sums_ = headrace::gpu::DeviceBuffer(std::max<std::uint64_t>(bytes, std::uint64_t{1} << 20));
    }
    auto* sums = reinterpret_cast<std::uint64_t*>(sums_.pointer());
    auto* out = reinterpret_cast<std::uint64_t*>(hashes) + first;
    void* sum_args[] = {&launch, &keys, &sums};
    headrace::gpu::launch_1d(block_sums_, launch.blocks * 8, block_threads, stream, sum_args);
    void* finish_args[] = {&launch, &keys, &sums, &out};
    headrace::gpu::launch_1d(finish_, std::uint64_t{launch.count} * 8, block_threads, stream, finish_args);
  }
}

}  // namespace headrace::codec::gpu
