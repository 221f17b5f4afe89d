#include "headrace/codec/cpu/chunk_codec.hpp"
#include "headrace/codec/cpu/gdeflate.hpp"

#include <gtest/gtest.h>

#include <random>

#include "headrace/error.hpp"

namespace headrace::codec::cpu {
namespace {

using format::CodecId;

std::vector<std::byte> compressible(std::size_t size) {
  std::vector<std::byte> bytes(size);
  std::mt19937 random(7);
  // Runs of 64 equal bytes with a random byte in every 16: compressible, not trivially.
  for (std::size_t i = 0; i < size; ++i) bytes[i] = std::byte(static_cast<unsigned>(random() % 16 == 0 ? random() : i / 64));
  return bytes;
}

TEST(ChunkCodec, RoundTripsEveryCodecAndLevel) {
  const auto raw = compressible(300000);
  for (auto codec : {CodecId::lz4, CodecId::zstd}) {
    for (int level : {0, 1, 9}) {
      const auto stored = encode(codec, level, raw);
      EXPECT_LT(stored.size(), raw.size());
      std::vector<std::byte> back(raw.size());
      decode(codec, stored, back, "chunk", 4096);
      EXPECT_EQ(back, raw) << format::to_string(codec) << " level " << level;
    }
  }
}

TEST(ChunkCodec, CorruptDataNamesPathAndOffset) {
  const auto raw = compressible(100000);
  for (auto codec : {CodecId::lz4, CodecId::zstd}) {
    auto stored = encode(codec, 0, raw);
    stored.resize(stored.size() / 2);
    std::vector<std::byte> back(raw.size());
    try {
      decode(codec, stored, back, "data.hrc", 8192);
      FAIL() << "no error for " << format::to_string(codec);
    } catch (const CodecError& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("data.hrc: offset 8192"), std::string::npos) << message;
      EXPECT_NE(message.find("100000 bytes"), std::string::npos) << message;
    }
  }
}

TEST(ChunkCodec, WrongRawSizeIsAnError) {
  const auto raw = compressible(5000);
  const auto stored = encode(CodecId::zstd, 0, raw);
  std::vector<std::byte> small(4000);
  EXPECT_THROW(decode(CodecId::zstd, stored, small, "x", 0), CodecError);
  EXPECT_THROW((void)encode(CodecId::none, 0, raw), UsageError);
  // gdeflate: a CodecError for zstd bytes where libnvcomp_cpu is loaded, else UnavailableError naming it.
  try {
    decode(CodecId::gdeflate, stored, small, "x", 0);
    FAIL() << "zstd bytes decoded as gdeflate";
  } catch (const CodecError& error) {
    EXPECT_TRUE(gdeflate_available(nullptr)) << error.what();
  } catch (const UnavailableError& error) {
    EXPECT_FALSE(gdeflate_available(nullptr)) << error.what();
  }
}

}  // namespace
}  // namespace headrace::codec::cpu
