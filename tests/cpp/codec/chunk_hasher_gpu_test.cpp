// The GPU's XXH3 of chunks in its memory against the library's on the host, bit for bit; without a GPU
// the tests skip and say why, and the hasher refuses to be made.
#include "headrace/codec/gpu/chunk_hasher.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "headrace/error.hpp"
#include "headrace/format/checksum.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/stream.hpp"

namespace headrace::codec::gpu {
namespace {

namespace cuda = headrace::gpu;

TEST(ChunkHasher, OnlyLongAlignedChunksGoToTheGpu) {
  EXPECT_TRUE(ChunkHasher::hashes({4096, 241}));
  EXPECT_FALSE(ChunkHasher::hashes({4096, 240}));  // the library's short paths
  EXPECT_FALSE(ChunkHasher::hashes({4100, 4096}));
  if (cuda::device_count() == 0) EXPECT_THROW(ChunkHasher(0), Error);
}

TEST(ChunkHasherGpu, HashesEveryChunkAsTheLibraryDoes) {
  if (cuda::device_count() == 0) GTEST_SKIP() << "no GPU: " << (cuda::driver() == nullptr ? cuda::why_no_driver() : "0 devices");
  std::mt19937_64 random(5);
  std::vector<std::byte> bytes(std::size_t{24} << 20);
  for (auto& b : bytes) b = static_cast<std::byte>(random());
  cuda::Device device(0);
  cuda::DeviceBuffer memory(bytes.size());
  cuda::copy_to_device(memory.pointer(), bytes.data(), bytes.size());
  // Lengths at the block and stripe edges, 4 MiB chunks, and more chunks than one launch takes.
  std::vector<std::uint64_t> lengths = {241, 1024, 1025, 1088, 1089, 65536, 65536 + 63, std::uint64_t{4} << 20, (std::uint64_t{4} << 20) + 4097};
  while (lengths.size() < 150) lengths.push_back(241 + random() % 100000);
  std::vector<ChunkHasher::Chunk> chunks;
  std::uint64_t at = 0;
  for (const std::uint64_t length : lengths) {
    chunks.push_back({memory.pointer() + at, length});
    at = (at + length + 7) / 8 * 8 + 8 * (random() % 3);
    ASSERT_LE(at, bytes.size());
  }
  cuda::DeviceBuffer hashes(chunks.size() * 8);
  ChunkHasher hasher(0);
  const cuda::Stream stream;
  for (int pass = 0; pass < 2; ++pass) {  // the second reuses the scratch
    hasher.hash(chunks, hashes.pointer(), stream.handle());
    stream.synchronize();
    std::vector<std::uint64_t> got(chunks.size());
    cuda::copy_to_host(got.data(), hashes.pointer(), got.size() * 8);
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      const std::uint64_t offset = chunks[i].address - memory.pointer();
      EXPECT_EQ(got[i], format::xxh3_64({bytes.data() + offset, chunks[i].length})) << i << ": " << chunks[i].length;
    }
  }
  EXPECT_THROW(hasher.hash(std::vector<ChunkHasher::Chunk>{{memory.pointer(), 100}}, hashes.pointer(), stream.handle()), UsageError);
}

}  // namespace
}  // namespace headrace::codec::gpu
