// Private to the probe: SplitMix64 (Steele, Lea, Flood 2014), the seeded generator behind the test
// file's bytes and the random offsets. Fast and good enough that the bytes do not compress.
#pragma once

#include <cstdint>

namespace headrace::probe::detail {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) noexcept : state_(seed) {}

  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, bound) by Lemire's multiply-shift (bias below 2^-64 * bound, negligible here).
  std::uint64_t below(std::uint64_t bound) noexcept {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * bound) >> 64);
  }

 private:
  std::uint64_t state_;
};

}  // namespace headrace::probe::detail
