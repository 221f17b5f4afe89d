// What the chunk hash kernels (chunk_hash_kernels.cu) take by value: up to 64 chunks a launch.
#pragma once

#include <cstdint>

#include "headrace/format/xxh3_lanes.hpp"

namespace headrace::codec::gpu {

inline constexpr std::uint32_t hashed_chunks_a_launch = 64;

struct HashedChunks {
  std::uint64_t address[hashed_chunks_a_launch];      // device; a multiple of 8
  std::uint64_t length[hashed_chunks_a_launch];       // > 240 bytes
  std::uint64_t first_block[hashed_chunks_a_launch];  // into the block sums: whole blocks and the partial one
  std::uint32_t count = 0;
  std::uint64_t blocks = 0;  // of every chunk
};

// Blocks of sums a chunk of `length` bytes takes: its whole blocks and the partial one.
[[nodiscard]] HEADRACE_HD inline std::uint64_t summed_blocks(std::uint64_t length) {
  return format::xxh3_blocks(length).whole + 1;
}

}  // namespace headrace::codec::gpu
