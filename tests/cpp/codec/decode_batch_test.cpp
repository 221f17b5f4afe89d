// How a DecodeBatch plans a batch for the GPU, on the CPU (nothing is issued): chunks grouped by nvCOMP
// coding, parts cut within a decoder's limits by blocks and raw bytes, whole chunks to a part, blocks
// read from each chunk's block table, spare bytes for chains with filters, and a chunk whose block
// table does not fit refused before it joins a part.
#include "headrace/codec/gpu/decode_batch.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "headrace/codec/chain.hpp"
#include "headrace/error.hpp"

namespace headrace::codec::gpu {
namespace {

constexpr std::uint64_t chunk_raw_bytes = 16 << 10;

// A chunk of `chain` encoded on the CPU; its device addresses are made up (nothing is issued).
struct EncodedChunk {
  std::vector<std::byte> stored;
  ChainChunk chunk;
};

// label: a string the caller keeps.
EncodedChunk encoded(const Chain& chain, std::uint64_t raw_size, std::string_view label) {
  std::vector<std::byte> raw(raw_size);
  for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<std::byte>(i / 64 % 7);
  EncodedChunk result;
  result.stored = chain.encode(raw);
  result.chunk = {0x10000, result.stored, 0x20000, raw_size, &chain, label};
  return result;
}

TEST(DecodeBatch, GroupsChunksByCodingInTheirOrder) {
  const Chain lz4 = Chain::parse("lz4", ElementShape{});
  const Chain zstd = Chain::parse("zstd", ElementShape{});
  const Chain zstd_strong = Chain::parse("zstd(level=19)", ElementShape{});  // decodes like any zstd
  const auto a = encoded(lz4, chunk_raw_bytes, "a"), b = encoded(zstd, chunk_raw_bytes, "b"),
             c = encoded(lz4, chunk_raw_bytes, "c"), d = encoded(zstd_strong, chunk_raw_bytes, "d");
  DecodeBatch batch(BatchedDecoderLimits{});
  EXPECT_EQ(batch.add(a.chunk), 0u);
  EXPECT_EQ(batch.add(b.chunk), 1u);
  EXPECT_EQ(batch.add(c.chunk), 2u);
  EXPECT_EQ(batch.add(d.chunk), 3u);
  EXPECT_EQ(batch.chunk_count(), 4u);
  ASSERT_EQ(batch.parts().size(), 2u);
  for (const auto& [coding, parts] : batch.parts()) {
    ASSERT_EQ(parts.size(), 1u) << coding.name;
    const bool is_lz4 = coding.algorithm == shim::NvcompAlgorithm::lz4;
    EXPECT_EQ(parts[0].chunk_numbers, (is_lz4 ? std::vector<std::size_t>{0, 2} : std::vector<std::size_t>{1, 3}));
    EXPECT_EQ(parts[0].blocks.items.size(), 2u);
    EXPECT_EQ(parts[0].blocks.chunk_of_item, (std::vector<std::size_t>{0, 1}));
    EXPECT_EQ(parts[0].blocks.spare_bytes, 0u);
  }
}

TEST(DecodeBatch, SplitsByBlocksAndRawBytesKeepingChunksWhole) {
  const Chain blocked = Chain::parse("lz4(block=4096)", ElementShape{});  // 4 blocks a chunk
  const std::vector<std::string> labels = {"chunk 0", "chunk 1", "chunk 2", "chunk 3", "chunk 4"};
  std::vector<EncodedChunk> chunks;
  for (const auto& label : labels) chunks.push_back(encoded(blocked, chunk_raw_bytes, label));
  BatchedDecoderLimits by_blocks;
  by_blocks.max_chunks = 10;  // two chunks' 8 blocks fit, a third's would pass 10
  DecodeBatch batch(by_blocks);
  for (const auto& chunk : chunks) (void)batch.add(chunk.chunk);
  const auto& parts = batch.parts().begin()->second;
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].chunk_numbers, (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(parts[1].chunk_numbers, (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(parts[2].chunk_numbers, (std::vector<std::size_t>{4}));
  EXPECT_EQ(parts[0].blocks.items.size(), 8u);
  EXPECT_EQ(parts[0].blocks.chunk_of_item, (std::vector<std::size_t>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(parts[0].blocks.items[5].raw, 4096u);  // a block's place in its chunk
  EXPECT_EQ(parts[0].blocks.labels[5], "chunk 1: block 1");

  BatchedDecoderLimits by_bytes;
  by_bytes.max_total_raw_bytes = 3 * chunk_raw_bytes;
  DecodeBatch by_size(by_bytes);
  for (const auto& chunk : chunks) (void)by_size.add(chunk.chunk);
  const auto& sized = by_size.parts().begin()->second;
  ASSERT_EQ(sized.size(), 2u);
  EXPECT_EQ(sized[0].chunks.size(), 3u);
  EXPECT_EQ(sized[1].chunks.size(), 2u);
}

TEST(DecodeBatch, AChunkBeyondTheLimitsStillGetsAPartOfItsOwn) {
  const Chain blocked = Chain::parse("lz4(block=4096)", ElementShape{});
  const auto chunk = encoded(blocked, chunk_raw_bytes, "big");
  BatchedDecoderLimits tiny;
  tiny.max_chunks = 2;
  DecodeBatch batch(tiny);
  (void)batch.add(chunk.chunk);
  (void)batch.add(chunk.chunk);
  const auto& parts = batch.parts().begin()->second;
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].blocks.items.size(), 4u);
}

TEST(DecodeBatch, ChainsWithFiltersGetSpareBytes) {
  const Chain plain = Chain::parse("lz4", ElementShape{});
  const Chain shuffled = Chain::parse("shuffle(width=4)|lz4", ElementShape{});
  const auto a = encoded(shuffled, chunk_raw_bytes + 100, "a"), b = encoded(plain, chunk_raw_bytes, "b"),
             c = encoded(shuffled, chunk_raw_bytes, "c");
  DecodeBatch batch(BatchedDecoderLimits{});
  for (const auto* chunk : {&a, &b, &c}) (void)batch.add(chunk->chunk);
  const auto& part = batch.parts().begin()->second.front();
  ASSERT_EQ(part.blocks.spare_offset.size(), 3u);
  EXPECT_EQ(part.blocks.spare_offset[0], 0u);
  EXPECT_EQ(part.blocks.spare_offset[1], ChainBatch::no_spare);
  EXPECT_EQ(part.blocks.spare_offset[2], (chunk_raw_bytes + 100 + 255) / 256 * 256);  // packed at 256-byte offsets
  EXPECT_EQ(part.blocks.spare_bytes, (chunk_raw_bytes + 100 + 255) / 256 * 256 + chunk_raw_bytes);
}

TEST(DecodeBatch, RefusesABlockTableThatDoesNotFitBeforeAddingIt) {
  const Chain blocked = Chain::parse("lz4(block=4096)", ElementShape{});
  auto broken = encoded(blocked, chunk_raw_bytes, "data.hrc: offset 8192: frame 0 field 'x' chunk 3");
  std::memset(broken.stored.data(), 0xff, 4);  // a block count far beyond the stored bytes
  DecodeBatch batch(BatchedDecoderLimits{});
  try {
    (void)batch.add(broken.chunk);
    FAIL() << "a broken block table was accepted";
  } catch (const CodecError& error) {
    EXPECT_EQ(std::string(error.what()).rfind("data.hrc: offset 8192: frame 0 field 'x' chunk 3", 0), 0u) << error.what();
  }
  EXPECT_EQ(batch.chunk_count(), 0u);
  EXPECT_TRUE(batch.parts().empty());
}

}  // namespace
}  // namespace headrace::codec::gpu
