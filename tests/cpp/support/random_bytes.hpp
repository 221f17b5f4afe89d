// Test data that is the same on every machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace headrace::testing {

// Deterministic pseudo-random bytes (splitmix64), the same on every machine.
inline std::vector<std::byte> pseudo_random_bytes(std::size_t size_bytes, std::uint64_t seed) {
  std::vector<std::byte> bytes(size_bytes);
  std::uint64_t state = seed;
  for (std::size_t i = 0; i < size_bytes; i += 8) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    for (std::size_t b = 0; b < 8 && i + b < size_bytes; ++b) bytes[i + b] = static_cast<std::byte>(z >> (8 * b));
  }
  return bytes;
}

}  // namespace headrace::testing
