#include "headrace/format/container.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "headrace/error.hpp"
#include "headrace/format/layout.hpp"
#include "headrace/format/writer.hpp"
#include "support/container_fixture.hpp"
#include "support/temp_directory.hpp"

namespace headrace::format {
namespace {

using testing::TempDirectory;

class ContainerTest : public ::testing::Test {
 protected:
  TempDirectory dir;
  std::string path = dir.file("data.hrc");
};

TEST_F(ContainerTest, RoundTripsIndex) {
  testing::write_particles(path, 3, 1000);
  const auto c = Container::open(path);
  ASSERT_EQ(c.fields().size(), 1u);
  EXPECT_EQ(c.fields()[0].name, "particles");
  EXPECT_EQ(c.fields()[0].dtype, DType::float32);
  EXPECT_EQ(c.fields()[0].components, 8u);
  ASSERT_EQ(c.frames().size(), 3u);
  EXPECT_DOUBLE_EQ(c.frames()[2].time, 1.0);
  EXPECT_DOUBLE_EQ(c.frames()[1].bbox.max[2], 1.0);
  // 4096-byte chunks hold 128 particles: 1000 particles are 8 chunks, the last of 104.
  const auto chunks = c.chunks_of(1, 0);
  ASSERT_EQ(chunks.size(), 8u);
  EXPECT_EQ(chunks.back().first_element, 896u);
  EXPECT_EQ(chunks.back().element_count, 104u);
  EXPECT_EQ(c.frame_field(1, 0).element_count, 1000u);
  for (const auto& chunk : c.chunks()) EXPECT_EQ(chunk.offset % layout::alignment_bytes, 0u);
  EXPECT_EQ(c.file_size() % layout::alignment_bytes, 0u);
  EXPECT_EQ(std::filesystem::file_size(path), c.file_size());
  EXPECT_EQ(std::get<std::string>(c.attributes().at("source_format")), "test");
  EXPECT_EQ(c.raw_bytes(), 3u * 1000 * 32);
}

TEST_F(ContainerTest, RecordsValueRangesPerComponent) {
  testing::write_particles(path, 1, 200);
  const auto c = Container::open(path);
  const auto& first = c.chunks_of(0, 0)[0];  // elements 0..127: value = i, component c = 8e + c
  const auto lo = c.range_min(first);
  const auto hi = c.range_max(first);
  for (int k = 0; k < 8; ++k) {
    EXPECT_DOUBLE_EQ(lo[k], k);
    EXPECT_DOUBLE_EQ(hi[k], 127 * 8 + k);
  }
}

TEST_F(ContainerTest, WritesCompressedChunksThatDecode) {
  for (auto codec : {CodecId::lz4, CodecId::zstd}) {
    testing::write_particles(path, 2, 3000, codec, 16384);
    const auto c = Container::open(path);
    const auto file = testing::read_file(path);
    const auto values = testing::particle_values(3000, 1.0f);
    std::vector<std::byte> raw(values.size() * sizeof(float));
    for (const auto& chunk : c.chunks_of(1, 0)) {
      EXPECT_EQ(chunk.codec, codec);
      std::span<const std::byte> stored(file.data() + chunk.offset, chunk.stored_size);
      c.verify_chunk(chunk, stored);
      codec::cpu::decode(codec, stored, std::span<std::byte>(raw).subspan(chunk.first_element * 32, chunk.raw_size), path,
                         chunk.offset);
    }
    EXPECT_EQ(std::memcmp(raw.data(), values.data(), raw.size()), 0) << to_string(codec);
  }
}

TEST_F(ContainerTest, MissingPathIsFileNotFound) {
  EXPECT_THROW((void)Container::open(dir.file("absent.hrc")), FileNotFoundError);
}

// Expects `open` to throw ErrorType with the path and `fragment` in its message.
template <typename ErrorType>
void expect_open_fails(const std::string& path, const std::string& fragment) {
  try {
    (void)Container::open(path);
    FAIL() << "no error, expected one containing '" << fragment << "'";
  } catch (const ErrorType& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find("offset"), std::string::npos) << message;
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
  }
}

TEST_F(ContainerTest, TruncatedFile) {
  testing::write_particles(path, 2, 500);
  auto file = testing::read_file(path);
  file.resize(file.size() - 4096);
  testing::write_file(path, file);
  expect_open_fails<TruncatedFileError>(path, "expected a file of");
  file.resize(60);
  testing::write_file(path, file);
  expect_open_fails<TruncatedFileError>(path, "superblock");
}

TEST_F(ContainerTest, WrongMagic) {
  testing::write_particles(path, 1, 10);
  auto file = testing::read_file(path);
  file[0] = std::byte{'X'};
  testing::write_file(path, file);
  expect_open_fails<BadMagicError>(path, "magic 'HEADRACE'");
}

TEST_F(ContainerTest, UnknownVersion) {
  testing::write_particles(path, 1, 10);
  auto file = testing::read_file(path);
  file[8] = std::byte{2};  // version_major
  testing::reseal(file);
  testing::write_file(path, file);
  expect_open_fails<UnsupportedVersionError>(path, "found version 2.0");
}

TEST_F(ContainerTest, CorruptIndexFailsItsChecksum) {
  testing::write_particles(path, 1, 10);
  auto file = testing::read_file(path);
  const auto block = testing::superblock_of(file);
  file[block.index_offset + 70] ^= std::byte{0x40};
  testing::write_file(path, file);
  expect_open_fails<CorruptIndexError>(path, "index checksum");
}

TEST_F(ContainerTest, ChunkPastTheDataRegion) {
  testing::write_particles(path, 1, 10);
  auto file = testing::read_file(path);
  const auto block = testing::superblock_of(file);
  // The one chunk record follows header (64), one field (32), one frame (64), one frame-field (24).
  const std::uint64_t chunk_at = block.index_offset + 64 + 32 + 64 + 24;
  const std::uint64_t beyond = block.file_size + 4096;
  std::memcpy(file.data() + chunk_at, &beyond, sizeof beyond);
  testing::reseal(file);
  testing::write_file(path, file);
  expect_open_fails<ChunkOutOfBoundsError>(path, "inside the data region");
}

TEST_F(ContainerTest, ChecksumMismatchNamesTheChunk) {
  testing::write_particles(path, 1, 300);
  auto file = testing::read_file(path);
  const auto c = Container::open(path);
  const auto& chunk = c.chunks_of(0, 0)[1];
  file[chunk.offset + 5] ^= std::byte{1};
  std::span<const std::byte> stored(file.data() + chunk.offset, chunk.stored_size);
  try {
    c.verify_chunk(chunk, stored);
    FAIL() << "no checksum error";
  } catch (const ChecksumMismatchError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("offset " + std::to_string(chunk.offset)), std::string::npos) << message;
    EXPECT_NE(message.find("field 'particles'"), std::string::npos) << message;
  }
}

TEST_F(ContainerTest, ZeroLengthFieldIsRejected) {
  testing::write_particles(path, 1, 10);
  auto file = testing::read_file(path);
  const auto block = testing::superblock_of(file);
  const std::uint32_t zero = 0;
  std::memcpy(file.data() + block.index_offset + 64 + 12, &zero, sizeof zero);  // components of field 0
  testing::reseal(file);
  testing::write_file(path, file);
  expect_open_fails<EmptyFieldError>(path, "components");
}

// Format 1.0 reserved code 3: a 1.0 file that uses it is corrupt; 1.1 admits it (docs/format.md 5.7).
TEST_F(ContainerTest, GdeflateNeedsFormat1Point1) {
  testing::write_particles(path, 1, 10);
  auto file = testing::read_file(path);
  EXPECT_EQ(format::Container::open(path).version_minor(), 0u);  // no gdeflate: still written as 1.0
  const auto block = testing::superblock_of(file);
  file[block.index_offset + 64 + 32 + 64 + 24 + 56] = std::byte{3};
  testing::reseal(file);
  testing::write_file(path, file);
  expect_open_fails<CorruptIndexError>(path, "gdeflate, which needs format 1.1");
  const std::uint16_t minor = 1;
  std::memcpy(file.data() + 10, &minor, sizeof minor);
  testing::reseal(file);
  testing::write_file(path, file);
  const auto opened = format::Container::open(path);
  EXPECT_EQ(opened.version_minor(), 1u);
  EXPECT_EQ(opened.chunks_of(0, 0)[0].codec, CodecId::gdeflate);
  file[block.index_offset + 64 + 32 + 64 + 24 + 56] = std::byte{4};
  testing::reseal(file);
  testing::write_file(path, file);
  expect_open_fails<CorruptIndexError>(path, "chain, which needs format 1.3 (the file says 1.1)");
  file[block.index_offset + 64 + 32 + 64 + 24 + 56] = std::byte{5};
  testing::reseal(file);
  testing::write_file(path, file);
  expect_open_fails<CorruptIndexError>(path, "code 5");
}

// A 1.0 or 1.1 file cannot hold an empty frame-field: its readers refused one (docs/format.md 5.4).
TEST_F(ContainerTest, EmptyFramesNeedFormat1Point2AndNoChunks) {
  {
    ContainerWriter writer(path, {{"p", DType::float32, 1}}, {});
    const std::vector<float> values{1, 2};
    writer.write_field(writer.add_frame(0, std::nullopt), 0, std::as_bytes(std::span<const float>(values)));
    writer.write_field(writer.add_frame(1, std::nullopt), 0, {});
    writer.close();
  }
  auto file = testing::read_file(path);
  EXPECT_EQ(Container::open(path).version_minor(), 2u);
  const std::uint16_t minor = 1;
  std::memcpy(file.data() + 10, &minor, sizeof minor);
  testing::reseal(file);
  testing::write_file(path, file);
  expect_open_fails<EmptyFieldError>(path, "empty frames need format 1.2, the file says 1.1");
  const std::uint16_t current = 2;
  std::memcpy(file.data() + 10, &current, sizeof current);
  const auto block = testing::superblock_of(file);
  const std::uint32_t one_chunk = 1;  // frame 1's record claims a chunk for its zero elements
  std::memcpy(file.data() + block.index_offset + 64 + 32 + 2 * 64 + 24 + 16, &one_chunk, sizeof one_chunk);
  testing::reseal(file);
  testing::write_file(path, file);
  expect_open_fails<CorruptIndexError>(path, "chunks exactly when it holds elements");
}

TEST_F(ContainerTest, TrailingBytesAreCorruption) {
  testing::write_particles(path, 1, 10);
  auto file = testing::read_file(path);
  file.resize(file.size() + 100);
  testing::write_file(path, file);
  expect_open_fails<CorruptIndexError>(path, "end of file");
}

}  // namespace
}  // namespace headrace::format
