// XXH3-64 (seed 0, the default secret) of an input longer than 240 bytes, cut so that a GPU can compute it
// (HEADRACE_HD: the kernels and their CPU reference share it). The long hash keeps 8 lanes of 64 bits; a
// block of 16 stripes (1 KiB) only adds to each lane, and the lanes are scrambled at each block's end.
// So each block's additions (xxh3_lane_sum) may be computed apart, in parallel over the blocks, and then
// each lane runs alone through its blocks (add, scramble), the 8 lanes meeting only in xxh3_finish. The
// same arithmetic as the library's scalar path, in its order within a lane: the sums are bit for bit its.
#pragma once

#include <cstdint>

#include "headrace/detail/host_device.hpp"

namespace headrace::format {

inline constexpr std::uint64_t xxh3_stripe_bytes = 64, xxh3_block_stripes = 16;
inline constexpr std::uint64_t xxh3_block_bytes = xxh3_stripe_bytes * xxh3_block_stripes;
inline constexpr std::uint64_t xxh3_shortest_long = 241;  // shorter inputs take the library's other paths

// The default secret's words as the long hash reads them (from the library: xxh3_keys()).
struct Xxh3Keys {
  std::uint64_t stripe[24];  // at byte 8 n: stripe n of a block, lane i, reads word n + i; scrambling, words 16 + i
  std::uint64_t last[8];     // at byte 121 + 8 i: the last stripe's
  std::uint64_t merge[8];    // at byte 11 + 8 i: the lanes' merge
};

// The blocks an input of `length` (> 240) bytes has: whole ones (each scrambled after) and the stripes of
// the partial one after them (0 to 15, never scrambled; the last stripe is apart).
struct Xxh3Blocks {
  std::uint64_t whole = 0, last_stripes = 0;
};
[[nodiscard]] HEADRACE_HD inline Xxh3Blocks xxh3_blocks(std::uint64_t length) {
  const std::uint64_t whole = (length - 1) / xxh3_block_bytes;
  return {whole, ((length - 1) - whole * xxh3_block_bytes) / xxh3_stripe_bytes};
}

[[nodiscard]] HEADRACE_HD inline std::uint64_t xxh3_init(unsigned lane) {
  constexpr std::uint64_t init[8] = {0xC2B2AE3DULL,         0x9E3779B185EBCA87ULL, 0xC2B2AE3D27D4EB4FULL, 0x165667B19E3779F9ULL,
                                     0x85EBCA77C2B2AE63ULL, 0x85EBCA77ULL,         0x27D4EB2F165667C5ULL, 0x9E3779B1ULL};
  return init[lane];
}

// What `stripes` stripes from a block's start (`words`: 8 little-endian words a stripe) add to lane `lane`:
// each stripe adds its neighbour lane's word and the product of its own word's halves, keyed.
[[nodiscard]] HEADRACE_HD inline std::uint64_t xxh3_lane_sum(const Xxh3Keys& keys, const std::uint64_t* words, std::uint64_t stripes,
                                                             unsigned lane) {
  std::uint64_t sum = 0;
  for (std::uint64_t n = 0; n < stripes; ++n) {
    const std::uint64_t keyed = words[8 * n + lane] ^ keys.stripe[n + lane];
    sum += words[8 * n + (lane ^ 1u)] + (keyed & 0xFFFFFFFFULL) * (keyed >> 32);
  }
  return sum;
}

[[nodiscard]] HEADRACE_HD inline std::uint64_t xxh3_scramble(const Xxh3Keys& keys, std::uint64_t acc, unsigned lane) {
  acc ^= acc >> 47;
  acc ^= keys.stripe[16 + lane];
  return acc * 0x9E3779B1ULL;
}

// The last stripe (the input's last 64 bytes, `words`), keyed apart.
[[nodiscard]] HEADRACE_HD inline std::uint64_t xxh3_last_stripe(const Xxh3Keys& keys, const std::uint64_t* words, unsigned lane) {
  const std::uint64_t keyed = words[lane] ^ keys.last[lane];
  return words[lane ^ 1u] + (keyed & 0xFFFFFFFFULL) * (keyed >> 32);
}

[[nodiscard]] HEADRACE_HD inline std::uint64_t xxh3_fold(std::uint64_t a, std::uint64_t b) {
#if defined(__CUDA_ARCH__)
  return (a * b) ^ __umul64hi(a, b);
#else
  const unsigned __int128 product = static_cast<unsigned __int128>(a) * b;
  return static_cast<std::uint64_t>(product) ^ static_cast<std::uint64_t>(product >> 64);
#endif
}

// The 8 lanes merged into the hash of `length` bytes.
[[nodiscard]] HEADRACE_HD inline std::uint64_t xxh3_finish(const Xxh3Keys& keys, const std::uint64_t acc[8], std::uint64_t length) {
  std::uint64_t h = length * 0x9E3779B185EBCA87ULL;
  for (unsigned i = 0; i < 4; ++i) h += xxh3_fold(acc[2 * i] ^ keys.merge[2 * i], acc[2 * i + 1] ^ keys.merge[2 * i + 1]);
  h ^= h >> 37;
  h *= 0x165667919E3779F9ULL;
  return h ^ (h >> 32);
}

// The whole hash on one thread, lane by lane, from `words` (the input as little-endian words, `length`
// > 240 bytes, readable to its last stripe): the CPU reference of the kernels' split.
[[nodiscard]] HEADRACE_HD inline std::uint64_t xxh3_by_lanes(const Xxh3Keys& keys, const std::uint64_t* words, std::uint64_t length,
                                                             const std::uint64_t* last_stripe) {
  const Xxh3Blocks blocks = xxh3_blocks(length);
  std::uint64_t acc[8];
  for (unsigned lane = 0; lane < 8; ++lane) {
    std::uint64_t a = xxh3_init(lane);
    for (std::uint64_t b = 0; b < blocks.whole; ++b)
      a = xxh3_scramble(keys, a + xxh3_lane_sum(keys, words + b * (xxh3_block_bytes / 8), xxh3_block_stripes, lane), lane);
    a += xxh3_lane_sum(keys, words + blocks.whole * (xxh3_block_bytes / 8), blocks.last_stripes, lane);
    acc[lane] = a + xxh3_last_stripe(keys, last_stripe, lane);
  }
  return xxh3_finish(keys, acc, length);
}

}  // namespace headrace::format
