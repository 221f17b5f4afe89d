// The host's checks of stored chunks: a checksum that matches passes, one that does not names the
// chunk; a page-locked chunk is checked once; CPU decoding lands the raw bytes.
#include "headrace/codec/chunk_checks.hpp"

#include <gtest/gtest.h>

#include "headrace/codec/cpu/chunk_codec.hpp"
#include "headrace/error.hpp"
#include "headrace/format/checksum.hpp"
#include "support/random_bytes.hpp"

namespace headrace::codec {
namespace {

TEST(ChunkChecker, ChecksumsPassOrNameTheChunkAndPinnedChunksAreCheckedOnce) {
  const auto bytes = testing::pseudo_random_bytes(64 << 10, 5);
  const std::uint64_t sum = format::xxh3_64(bytes);
  ChunkChecker checker(3);
  std::vector<ChunkCheck> chunks(3);
  for (auto& chunk : chunks) {
    chunk.stored = bytes.data();
    chunk.stored_size = bytes.size();
    chunk.checksum = sum;
  }
  chunks[1].checksum = sum + 1;
  chunks[1].label = "data.hrc: offset 4096: chunk 1";
  chunks[2].pinned_at = std::pair<std::uint64_t, std::uint64_t>{0, 4096};
  auto results = checker.run(chunks);
  EXPECT_FALSE(results[0].error) << message_of(results[0].error);
  ASSERT_TRUE(results[1].error);
  EXPECT_THROW(std::rethrow_exception(results[1].error), ChecksumMismatchError);
  EXPECT_NE(message_of(results[1].error).find("data.hrc: offset 4096: chunk 1: expected checksum"), std::string::npos)
      << message_of(results[1].error);
  EXPECT_FALSE(results[2].error);
  EXPECT_EQ(checker.checksums_checked(), 2u);  // the two that passed; the mismatch counts as none
  results = checker.run(std::span(chunks).subspan(2));  // the pinned chunk again: not computed again
  EXPECT_FALSE(results[0].error);
  EXPECT_EQ(checker.checksums_checked(), 2u);
}

TEST(ChunkChecker, CpuDecodingLandsTheRawBytes) {
  const auto raw = testing::pseudo_random_bytes(32 << 10, 6);
  const auto stored = cpu::encode(format::CodecId::lz4, 0, raw);
  std::vector<std::byte> out(raw.size());
  ChunkCheck chunk;
  chunk.stored = stored.data();
  chunk.stored_size = stored.size();
  chunk.checksum = format::xxh3_64(stored);
  const auto chain = Chain::of_codec(format::CodecId::lz4);
  chunk.chain = &chain;
  chunk.decode_into = out.data();
  chunk.raw_size = out.size();
  ChunkChecker checker(1);
  const auto results = checker.run({&chunk, 1});
  ASSERT_FALSE(results[0].error) << message_of(results[0].error);
  EXPECT_EQ(out, raw);
  EXPECT_GE(results[0].decode_seconds, 0.0);
}

}  // namespace
}  // namespace headrace::codec
