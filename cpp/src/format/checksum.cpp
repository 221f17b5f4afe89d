#include "headrace/format/checksum.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cstring>

namespace headrace::format {
namespace xxh3 {
// The wider instruction sets' builds (xxh3/*.cpp), chosen at run time: the same sums, faster.
std::uint64_t hash_avx2(const void* bytes, std::size_t size) noexcept;
std::uint64_t hash_avx512(const void* bytes, std::size_t size) noexcept;

std::uint64_t hash_baseline(const void* bytes, std::size_t size) noexcept { return XXH3_64bits(bytes, size); }
}  // namespace xxh3

std::vector<Xxh3Kernel> xxh3_kernels() {
  std::vector<Xxh3Kernel> kernels;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) kernels.push_back({"avx512", xxh3::hash_avx512});
  if (__builtin_cpu_supports("avx2")) kernels.push_back({"avx2", xxh3::hash_avx2});
  kernels.push_back({"sse2", xxh3::hash_baseline});
  return kernels;
}

namespace {

const Xxh3Kernel& fastest() {
  static const Xxh3Kernel kernel = xxh3_kernels().front();
  return kernel;
}

}  // namespace

const char* xxh3_instruction_set() noexcept { return fastest().instruction_set; }

const Xxh3Keys& xxh3_keys() noexcept {
  static const Xxh3Keys keys = [] {
    static_assert(sizeof(XXH3_kSecret) == 192, "the long hash's default secret");
    Xxh3Keys k{};
    const auto word = [](std::size_t at) {
      std::uint64_t w = 0;
      std::memcpy(&w, XXH3_kSecret + at, sizeof w);  // little-endian, as XXH_readLE64 on x86-64
      return w;
    };
    for (std::size_t i = 0; i < 24; ++i) k.stripe[i] = word(8 * i);
    for (std::size_t i = 0; i < 8; ++i) k.last[i] = word(192 - 64 - 7 + 8 * i), k.merge[i] = word(11 + 8 * i);
    return k;
  }();
  return keys;
}

std::uint64_t xxh3_64(std::span<const std::byte> bytes) noexcept { return fastest().hash(bytes.data(), bytes.size()); }

}  // namespace headrace::format
