// GDeflate on the CPU through nvCOMP's CPU library (the encoder a writer would use for chunks the GPU
// decodes): byte-exact round trips, its 64 KiB limit, corrupt data, and the reason when it is absent.
#include "headrace/codec/cpu/gdeflate.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include "headrace/error.hpp"
#include "headrace/shim/nvcomp.hpp"

namespace headrace::codec::cpu {
namespace {

std::vector<std::byte> compressible(std::size_t size, unsigned seed) {
  std::vector<std::byte> bytes(size);
  std::mt19937 random(seed);
  for (std::size_t i = 0; i < size; ++i)
    bytes[i] = std::byte(static_cast<unsigned>(random() % 16 == 0 ? random() : (i / 64 + seed)));
  return bytes;
}

class GpuGdeflateCpuCodec : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!gdeflate_available(&why)) GTEST_SKIP() << "no libnvcomp_cpu here: " << why;
  }
};

TEST(GpuGdeflateUnavailable, SaysWhyAndThrowsUnavailable) {
  std::string why;
  if (gdeflate_available(&why)) GTEST_SKIP() << "libnvcomp_cpu loaded from " << shim::nvcomp_cpu_path();
  EXPECT_EQ(why, shim::why_no_nvcomp_cpu());
  EXPECT_NE(why.find("libnvcomp_cpu"), std::string::npos) << why;
  const auto raw = compressible(100, 1);
  try {
    (void)gdeflate_encode(0, raw);
    FAIL() << "no error without libnvcomp_cpu";
  } catch (const UnavailableError& error) {
    EXPECT_NE(std::string(error.what()).find("CPU gdeflate unavailable: " + why), std::string::npos) << error.what();
  }
  std::vector<std::byte> back(100);
  EXPECT_THROW(gdeflate_decode(raw, back, "x", 0), UnavailableError);
}

TEST_F(GpuGdeflateCpuCodec, RoundTripsEverySizeAndLevel) {
  for (std::size_t size : {std::size_t{1}, std::size_t{3}, std::size_t{4097}, std::size_t{30001}, gdeflate_max_raw_chunk_bytes}) {
    const auto raw = compressible(size, static_cast<unsigned>(size));
    for (int level : {0, 1, 12}) {
      const auto stored = gdeflate_encode(level, raw);
      if (size >= 4097) EXPECT_LT(stored.size(), raw.size()) << size << " level " << level;
      std::vector<std::byte> back(size);
      gdeflate_decode(stored, back, "chunk", 4096);
      EXPECT_EQ(back, raw) << size << " bytes, level " << level;
    }
  }
}

TEST_F(GpuGdeflateCpuCodec, RejectsChunksOver64KiBAndBadLevels) {
  const auto raw = compressible(gdeflate_max_raw_chunk_bytes + 1, 5);
  try {
    (void)gdeflate_encode(0, raw);
    FAIL() << "no error for a chunk of 65537 bytes";
  } catch (const UsageError& error) {
    EXPECT_NE(std::string(error.what()).find("gdeflate chunks hold 1 to 65536 bytes when encoded on the CPU, got 65537"),
              std::string::npos)
        << error.what();
  }
  EXPECT_THROW((void)gdeflate_encode(0, std::span(raw).first(0)), UsageError);
  EXPECT_THROW((void)gdeflate_encode(13, std::span(raw).first(100)), UsageError);
  EXPECT_THROW((void)gdeflate_encode(-1, std::span(raw).first(100)), UsageError);
}

TEST_F(GpuGdeflateCpuCodec, CorruptDataNamesPathAndOffset) {
  const auto raw = compressible(60000, 9);
  auto stored = gdeflate_encode(0, raw);
  const std::vector<std::vector<std::byte>> corruptions = {
      std::vector<std::byte>(stored.begin(), stored.begin() + static_cast<std::ptrdiff_t>(stored.size() / 2)),  // truncated
      std::vector<std::byte>(stored.size(), std::byte{0xff}),                                                  // garbage
  };
  for (const auto& bad : corruptions) {
    std::vector<std::byte> back(raw.size());
    try {
      gdeflate_decode(bad, back, "data.hrc", 8192);
      FAIL() << "no error for corrupt data of " << bad.size() << " bytes";
    } catch (const CodecError& error) {
      const std::string message = error.what();
      EXPECT_EQ(message.rfind("data.hrc: offset 8192: expected gdeflate data of 60000 bytes", 0), 0u) << message;
    }
  }
  std::vector<std::byte> small(raw.size() - 1);
  EXPECT_THROW(gdeflate_decode(stored, small, "data.hrc", 8192), CodecError);
  std::vector<std::byte> large(raw.size() + 1);
  EXPECT_THROW(gdeflate_decode(stored, large, "data.hrc", 8192), CodecError);
}

TEST_F(GpuGdeflateCpuCodec, EncodesAndDecodesFromManyThreads) {
  std::vector<std::thread> threads;
  std::vector<int> mismatches(8, 0);
  for (unsigned t = 0; t < 8; ++t) {
    threads.emplace_back([t, &mismatches] {
      for (unsigned k = 0; k < 20; ++k) {
        const auto raw = compressible(1000 + t * 7000 + k, t * 100 + k);
        const auto stored = gdeflate_encode(static_cast<int>(1 + k % 12), raw);
        std::vector<std::byte> back(raw.size());
        gdeflate_decode(stored, back, "chunk", 0);
        mismatches[t] += back != raw;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (unsigned t = 0; t < 8; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace headrace::codec::cpu
