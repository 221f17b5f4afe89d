// Checksums of stored chunk bytes and of the index (XXH3-64, seed 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "headrace/format/xxh3_lanes.hpp"

namespace headrace::format {

[[nodiscard]] std::uint64_t xxh3_64(std::span<const std::byte> bytes) noexcept;

// The library's XXH3 built for one instruction set: every one gives the same sums.
struct Xxh3Kernel {
  const char* instruction_set;  // "avx512", "avx2" or "sse2"
  std::uint64_t (*hash)(const void* bytes, std::size_t size) noexcept;
};
// The builds this CPU runs, fastest first; xxh3_64 uses the first.
[[nodiscard]] std::vector<Xxh3Kernel> xxh3_kernels();
[[nodiscard]] const char* xxh3_instruction_set() noexcept;
// The library's default secret as xxh3_lanes.hpp reads it (for the GPU's hash of long chunks).
[[nodiscard]] const Xxh3Keys& xxh3_keys() noexcept;

}  // namespace headrace::format
