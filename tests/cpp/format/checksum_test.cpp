// XXH3 built for each instruction set gives the same sums.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace headrace::format
