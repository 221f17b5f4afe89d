// XXH3 built for each instruction set gives the same sums.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "headrace/format/checksum.hpp"

namespace headrace::format {
namespace {

// Every build of XXH3 this CPU runs (AVX-512, AVX2, the SSE2 baseline) gives the same sums; the
// fastest is the one in use.
TEST(Checksum, EveryInstructionSetGivesTheSameSums) {
  std::mt19937_64 random(11);
  std::vector<std::byte> bytes((1 << 20) + 77);
  for (auto& b : bytes) b = static_cast<std::byte>(random());
  const auto kernels = xxh3_kernels();
  ASSERT_FALSE(kernels.empty());
  EXPECT_STREQ(xxh3_instruction_set(), kernels.front().instruction_set);
  EXPECT_STREQ(kernels.back().instruction_set, "sse2");
  const auto& baseline = kernels.back();
  for (const std::size_t size : {std::size_t{0}, std::size_t{17}, std::size_t{200}, std::size_t{4099}, bytes.size()}) {
    for (const auto& kernel : kernels)
      EXPECT_EQ(kernel.hash(bytes.data(), size), baseline.hash(bytes.data(), size)) << kernel.instruction_set << " " << size;
  }
}

// The long hash cut into lanes (xxh3_lanes.hpp, what the GPU computes) gives the library's sums, at every
// length from the shortest long input through block and stripe edges to several MiB.
TEST(Checksum, TheLongHashByLanesIsTheLibrarys) {
  std::mt19937_64 random(12);
  std::vector<std::uint64_t> words(((4 << 20) + 4096) / 8);
  for (auto& w : words) w = random();
  const auto* bytes = reinterpret_cast<const std::byte*>(words.data());
  std::vector<std::uint64_t> lengths = {241, 255, 256, 1023, 1024, 1025, 1087, 1088, 1089, 2048, 2049, 4096 + 63, 65536, 65537,
                                        (4 << 20) - 1, 4 << 20, (4 << 20) + 4095};
  for (int i = 0; i < 200; ++i) lengths.push_back(241 + random() % 300000);
  for (const std::uint64_t length : lengths) {
    std::uint64_t last[8];
    std::memcpy(last, bytes + length - xxh3_stripe_bytes, sizeof last);
    EXPECT_EQ(xxh3_by_lanes(xxh3_keys(), words.data(), length, last), xxh3_64({bytes, length})) << length;
  }
}

}  // namespace
}  // namespace headrace::format
