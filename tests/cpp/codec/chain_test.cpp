// Codec chains (issue 19) on the CPU: how a user writes them and how the index stores them, the order a
// chain checks, every stage's round trip alone and behind filters, lossy bounds, errors that name the
// file, the chunk and the stage, and files of format 1.3 written and read back.
#include "headrace/codec/chain.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "headrace/codec/chain_writer.hpp"
#include "headrace/codec/chunk_reader.hpp"
#include "headrace/codec/registry.hpp"
#include "headrace/error.hpp"
#include "headrace/format/container.hpp"
#include "headrace/io/backend.hpp"
#include "support/container_fixture.hpp"
#include "support/temp_directory.hpp"

namespace headrace::codec {
namespace {

const ElementShape float3{format::DType::float32, 3, 0};
const ElementShape float1{format::DType::float32, 1, 64};

// A smooth field: 64 x 64 x n float32 values of a slow wave, as a simulation's scalars are.
std::vector<float> smooth_values(std::size_t n) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(i % 64), y = static_cast<double>(i / 64 % 64), z = static_cast<double>(i / 4096);
    values[i] = static_cast<float>(std::sin(0.05 * x) * std::cos(0.07 * y) + 0.01 * z + 1.5);
  }
  return values;
}

std::span<const std::byte> bytes_of(const std::vector<float>& values) { return std::as_bytes(std::span<const float>(values)); }

template <typename ErrorType>
std::string message_of(auto&& call) {
  try {
    call();
  } catch (const ErrorType& error) {
    return error.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Chain, UserTextBecomesTheStoredTextWithEveryValue) {
  const Chain chain = Chain::parse("split|shuffle|zstd", float3);
  EXPECT_EQ(chain.spec(), "split(components=3,width=4)|shuffle(width=4)|zstd(level=3,block=65536)");
  EXPECT_EQ(chain.filters().size(), 2u);
  EXPECT_EQ(chain.codec()->name(), "zstd");
  EXPECT_EQ(chain.record_codec(), format::CodecId::chain);
  EXPECT_FALSE(chain.error_bound());
  EXPECT_EQ(Chain::of_stored(chain.spec(), "test").spec(), chain.spec());
}

TEST(Chain, PlainCodecsKeepTheirRecordCode) {
  EXPECT_EQ(Chain::parse("zstd(level=9)", float1).record_codec(), format::CodecId::zstd);
  EXPECT_EQ(Chain::parse("lz4", float1).record_codec(), format::CodecId::lz4);
  EXPECT_EQ(Chain::parse("snappy", float1).record_codec(), format::CodecId::chain);
  EXPECT_TRUE(Chain::parse("none", float1).empty());
  EXPECT_EQ(Chain::parse("none", float1).record_codec(), format::CodecId::none);
  EXPECT_EQ(Chain::of_codec(format::CodecId::zstd).spec(), "zstd(level=3,block=0)");
  // A plain codec alone keeps one stream; its blocks, or a chain, make a chain record.
  EXPECT_EQ(Chain::parse("zstd(block=65536)", float1).record_codec(), format::CodecId::chain);
  EXPECT_EQ(Chain::parse("snappy", float1).spec(), "snappy(block=65536)");
}

TEST(Chain, DefaultsComeFromTheField) {
  EXPECT_EQ(Chain::parse("delta|zstd", float1).spec(), "delta(width=4,row=64)|zstd(level=3,block=65536)");  // the grid's x axis
  EXPECT_EQ(Chain::parse("xor|lz4", float3).spec(), "xor(width=4,row=1024)|lz4(level=1,block=65536)");
  const ElementShape doubles{format::DType::float64, 1, 0};
  EXPECT_EQ(Chain::parse("bitshuffle|bitcomp", doubles).spec(), "bitshuffle(width=8)|bitcomp(type=u64,algorithm=default,block=65536)");
  EXPECT_EQ(Chain::parse("ans", float1).spec(), "ans(type=float32,block=65536)");
  EXPECT_EQ(Chain::parse("cascaded", ElementShape{format::DType::int16, 1, 0}).spec(), "cascaded(type=i16,block=65536)");
}

TEST(Chain, RefusesWhatCannotBeAChain) {
  EXPECT_NE(message_of<UsageError>([] { (void)Chain::parse("zstd|shuffle", float1); }).find("comes after the codec"),
            std::string::npos);
  EXPECT_NE(message_of<UsageError>([] { (void)Chain::parse("shuffle", float1); }).find("no codec"), std::string::npos);
  EXPECT_NE(message_of<UsageError>([] { (void)Chain::parse("lz4|zstd", float1); }).find("two codecs"), std::string::npos);
  EXPECT_NE(message_of<UsageError>([] { (void)Chain::parse("shuffle|zipp", float1); }).find("unknown stage 'zipp'"),
            std::string::npos);
  EXPECT_NE(message_of<UsageError>([] { (void)Chain::parse("zstd(level=99)", float1); }).find("zstd: level=99 is out of range"),
            std::string::npos);
  EXPECT_NE(message_of<UsageError>([] { (void)Chain::parse("zstd(lvl=3)", float1); }).find("stage zstd has no key 'lvl'"),
            std::string::npos);
  EXPECT_NE(message_of<UsageError>([] { (void)Chain::parse("shuffle(width)|zstd", float1); }).find("expected key=value"),
            std::string::npos);
  EXPECT_NE(message_of<UsageError>([] { (void)Chain::parse("bitcomp_lossy", float1); }).find("'error' is required"),
            std::string::npos);
  EXPECT_NE(message_of<UsageError>([] { (void)Chain::parse("delta(width=3)|zstd", float1); }).find("width=3"), std::string::npos);
  EXPECT_NE(message_of<UsageError>([] {
              (void)Chain::parse("bitcomp_lossy(error=0.1)", ElementShape{format::DType::int16, 1, 0});
            }).find("bitcomp_lossy quantizes floats; the field holds int16"),
            std::string::npos);
  EXPECT_EQ(Chain::parse("bitcomp_lossy(error=0.1)", float1).spec(), "bitcomp_lossy(type=float32,error=0.1,algorithm=default,block=65536)");
  // A stored chain names every value: nothing is taken from a field there.
  const auto stored = message_of<CodecError>([] { (void)Chain::of_stored("shuffle(width=4)|zstd", "data.hrc: chain 0"); });
  EXPECT_NE(stored.find("data.hrc: chain 0"), std::string::npos) << stored;
  EXPECT_NE(stored.find("lacks 'level'"), std::string::npos) << stored;
}

// Every stage the CPU encodes, alone and behind each filter, gives back the raw bytes exactly.
TEST(Chain, EveryCpuStageRoundTripsAloneAndBehindFilters) {
  const auto values = smooth_values(3 * 4096 + 5);  // not a whole number of bit-shuffle groups or rows
  const auto raw = bytes_of(values);
  std::size_t tried = 0;
  for (const auto& entry : stage_registry()) {
    if (entry.kind != StageKind::codec) continue;
    const std::string codec = entry.name == "bitcomp_lossy" ? "bitcomp_lossy(error=0.001)" : std::string(entry.name);
    for (const std::string filters :
         {"", "split(components=1)|", "shuffle|", "bitshuffle|", "delta|", "xor|", "split(components=1)|shuffle|delta|"}) {
      if (entry.name == "bitcomp_lossy" && !filters.empty() && filters != "split(components=1)|") {
        const auto message = message_of<UsageError>([&] { (void)Chain::parse(filters + codec, float1); });
        EXPECT_NE(message.find("only split may come before a lossy stage"), std::string::npos) << message;
        continue;
      }
      const Chain chain = Chain::parse(filters + codec, float1);
      std::string why;
      if (!chain.cpu_encodes(&why)) {
        EXPECT_FALSE(chain.cpu_decodes(nullptr)) << chain.spec();
        continue;  // ans, cascaded; gdeflate and bitcomp without nvCOMP here (the GPU tests cover them)
      }
      const auto stored = chain.encode(raw);
      std::vector<std::byte> back(raw.size());
      chain.decode(stored, back, "chunk");
      if (chain.error_bound()) {
        std::vector<float> decoded(values.size());
        std::memcpy(decoded.data(), back.data(), back.size());
        for (std::size_t i = 0; i < values.size(); ++i)
          ASSERT_LE(std::abs(decoded[i] - values[i]), *chain.error_bound() * (1 + 1e-6)) << chain.spec() << " value " << i;
      } else {
        EXPECT_TRUE(std::equal(raw.begin(), raw.end(), back.begin())) << chain.spec();
      }
      ++tried;
    }
  }
  EXPECT_GE(tried, 24u);  // lz4, snappy, zstd, deflate at least, each six ways
}

TEST(Chain, FiltersMakeFloatsCompress) {
  const auto values = smooth_values(64 * 64 * 16);
  const auto raw = bytes_of(values);
  const auto plain = Chain::parse("zstd", float1).encode(raw).size();
  const auto shuffled = Chain::parse("shuffle|zstd", float1).encode(raw).size();
  const auto lz4_plain = Chain::parse("lz4", float1).encode(raw).size();
  const auto lz4_shuffled = Chain::parse("bitshuffle|lz4", float1).encode(raw).size();
  EXPECT_LT(static_cast<double>(shuffled), 0.8 * static_cast<double>(plain)) << shuffled << " of " << plain;
  EXPECT_LT(static_cast<double>(lz4_shuffled), 0.8 * static_cast<double>(lz4_plain)) << lz4_shuffled << " of " << lz4_plain;
}

TEST(Chain, GpuOnlyCodecsSayWhyOnTheCpu) {
  const Chain chain = Chain::parse("shuffle|ans", float1);
  std::string why;
  EXPECT_FALSE(chain.cpu_decodes(&why));
  EXPECT_NE(why.find("no CPU library"), std::string::npos) << why;
  std::vector<std::byte> out(16);
  const auto message = message_of<UnavailableError>([&] { chain.decode(std::vector<std::byte>(8), out, "data.hrc: chunk 3"); });
  EXPECT_NE(message.find("data.hrc: chunk 3"), std::string::npos) << message;
  EXPECT_NE(message.find("ans(type=float32,block=65536)"), std::string::npos) << message;
}

TEST(Chain, CorruptBytesNameTheChunkAndTheStage) {
  const auto values = smooth_values(4096);
  const Chain chain = Chain::parse("shuffle|zstd(block=0)", float1);
  auto stored = chain.encode(bytes_of(values));
  stored[stored.size() / 2] ^= std::byte{0x5a};
  stored.resize(stored.size() - 7);
  std::vector<std::byte> out(values.size() * 4);
  const auto message = message_of<CodecError>([&] { chain.decode(stored, out, "data.hrc: offset 8192: chunk 2"); });
  EXPECT_EQ(message.rfind("data.hrc: offset 8192: chunk 2: stage zstd(level=3,block=0): expected zstd data of 16384 bytes", 0), 0u)
      << message;
  std::vector<std::byte> small(100);
  const auto sized = message_of<CodecError>([&] { chain.decode(chain.encode(bytes_of(values)), small, "chunk 4"); });
  EXPECT_NE(sized.find("chunk 4: stage zstd(level=3,block=0)"), std::string::npos) << sized;
}

// A codec cuts a chunk into blocks of its `block` raw bytes, each decodable alone (nvCOMP decodes a
// frame's blocks in parallel); the block table is checked against the stored and raw sizes.
TEST(Chain, BlocksRoundTripAndTheirTableIsChecked) {
  const auto values = smooth_values(3 * 4096 + 5);  // 12293 floats: 49172 bytes, 13 blocks of 4096, the last short
  const auto raw = bytes_of(values);
  const Chain chain = Chain::parse("shuffle|zstd(block=4096)", float1);
  const auto stored = chain.encode(raw);
  const auto table = chain.codec()->blocks(stored, raw.size(), "chunk");
  ASSERT_EQ(table.size(), 13u);
  EXPECT_EQ(table.back().raw_offset, 12u * 4096);
  EXPECT_EQ(table.back().raw_size, raw.size() - 12 * 4096);
  for (const auto& block : table) EXPECT_EQ(block.stored_offset % 16, 0u);
  std::vector<std::byte> back(raw.size());
  chain.decode(stored, back, "chunk");
  EXPECT_TRUE(std::equal(raw.begin(), raw.end(), back.begin()));
  // Another raw size, a cut table, a block past the end: each named.
  std::vector<std::byte> other(raw.size() - 8192);
  EXPECT_NE(message_of<CodecError>([&] { chain.decode(stored, other, "data.hrc: chunk 7"); })
                .find("data.hrc: chunk 7: stage zstd(level=3,block=4096): expected a table of 11 blocks"),
            std::string::npos);
  const auto cut = std::span<const std::byte>(stored).first(20);
  EXPECT_NE(message_of<CodecError>([&] { chain.decode(cut, back, "chunk 8"); }).find("a table cut short"), std::string::npos);
  auto broken = stored;
  const std::uint32_t huge = 1u << 30;
  std::memcpy(broken.data() + 8 + 4 * 5, &huge, 4);
  EXPECT_NE(message_of<CodecError>([&] { chain.decode(broken, back, "chunk 9"); }).find("block 5 of 1073741824 bytes past the end"),
            std::string::npos);
  const std::uint32_t empty = 0;
  broken = stored;
  std::memcpy(broken.data() + 8 + 4 * 2, &empty, 4);
  EXPECT_NE(message_of<CodecError>([&] { chain.decode(broken, back, "chunk 10"); }).find("found block 2 empty"), std::string::npos);
  EXPECT_NE(message_of<UsageError>([] { (void)Chain::parse("zstd(block=1000)", float1); }).find("not a multiple of 4096"),
            std::string::npos);
}

class ChainFile : public ::testing::Test {
 protected:
  testing::TempDirectory dir;
  std::string path = dir.file("chains.hrc");

  // Two fields through two chains (one lossy when asked), three frames.
  void write(const std::string& density_chain, const std::string& velocity_chain) {
    format::WriterOptions options;
    options.chunk_size_bytes = 8192;
    const std::vector<format::FieldInfo> fields{{"density", format::DType::float32, 1}, {"velocity", format::DType::float32, 3}};
    store_fields_with(options, {Chain::parse(density_chain, float1), Chain::parse(velocity_chain, float3)});
    format::ContainerWriter writer(path, fields, options);
    for (int t = 0; t < 3; ++t) {
      const auto frame = writer.add_frame(t, std::nullopt);
      writer.write_field(frame, 0, bytes_of(density(t)));
      writer.write_field(frame, 1, bytes_of(velocity(t)));
    }
    writer.close();
  }
  static std::vector<float> density(int t) {
    auto values = smooth_values(5000);
    for (auto& v : values) v += 0.1f * static_cast<float>(t);
    return values;
  }
  static std::vector<float> velocity(int t) {
    auto values = smooth_values(3 * 3000);
    for (auto& v : values) v -= 0.2f * static_cast<float>(t);
    return values;
  }
  std::vector<float> read(const format::Container& c, std::uint32_t frame, std::uint32_t field) {
    auto backend = io::open_backend(io::BackendKind::posix, path);
    std::vector<float> values(field_raw_bytes(c, frame, field) / 4);
    read_field(c, *backend, frame, field, std::as_writable_bytes(std::span<float>(values)));
    return values;
  }
};

TEST_F(ChainFile, EachFieldReadsBackThroughItsChain) {
  write("shuffle|zstd", "split|bitshuffle|lz4");
  const auto c = format::Container::open(path);
  EXPECT_EQ(c.version_minor(), 3u);
  ASSERT_EQ(c.chains().size(), 2u);
  EXPECT_EQ(*c.chains()[0].spec, "shuffle(width=4)|zstd(level=3,block=65536)");
  EXPECT_EQ(*c.chains()[1].spec, "split(components=3,width=4)|bitshuffle(width=4)|lz4(level=1,block=65536)");
  EXPECT_FALSE(c.chains()[0].error_bound);
  for (const auto& chunk : c.chunks()) {
    EXPECT_EQ(chunk.codec, format::CodecId::chain);
    EXPECT_EQ(chunk.chain, chunk.field);
    EXPECT_LT(chunk.stored_size, chunk.raw_size);
  }
  for (std::uint32_t t = 0; t < 3; ++t) {
    EXPECT_EQ(read(c, t, 0), density(static_cast<int>(t)));
    EXPECT_EQ(read(c, t, 1), velocity(static_cast<int>(t)));
  }
}

TEST_F(ChainFile, PlainCodecsStillWriteAnOlderVersion) {
  write("zstd", "none");
  const auto c = format::Container::open(path);
  EXPECT_EQ(c.version_minor(), 0u);
  EXPECT_TRUE(c.chains().empty());
  EXPECT_EQ(read(c, 2, 0), density(2));
  EXPECT_EQ(read(c, 2, 1), velocity(2));
}

TEST_F(ChainFile, ALossyChainIsMarkedWithItsBound) {
  std::string why;
  if (!Chain::parse("bitcomp_lossy(error=0.01)", float1).cpu_encodes(&why)) GTEST_SKIP() << why;
  write("bitcomp_lossy(error=0.01)", "shuffle|zstd");
  const auto c = format::Container::open(path);
  ASSERT_EQ(c.chains().size(), 2u);
  ASSERT_TRUE(c.chains()[0].error_bound);
  EXPECT_DOUBLE_EQ(*c.chains()[0].error_bound, 0.01);
  EXPECT_FALSE(c.chains()[1].error_bound);
  const auto back = read(c, 1, 0), written = density(1);
  double worst = 0;
  for (std::size_t i = 0; i < back.size(); ++i) worst = std::max(worst, static_cast<double>(std::abs(back[i] - written[i])));
  EXPECT_LE(worst, 0.01 * (1 + 1e-6));
  EXPECT_GT(worst, 0.0);  // it is lossy
  EXPECT_EQ(read(c, 1, 1), velocity(1));
}

TEST_F(ChainFile, AnUnknownStageInTheIndexNamesFileChunkAndStage) {
  write("shuffle|zstd", "split|lz4");
  auto file = testing::read_file(path);
  const std::string text = "shuffle(width=4)|zstd(level=3,block=65536)";
  const auto at = std::search(file.begin(), file.end(), reinterpret_cast<const std::byte*>(text.data()),
                              reinterpret_cast<const std::byte*>(text.data()) + text.size());
  ASSERT_NE(at, file.end());
  *(at + static_cast<std::ptrdiff_t>(text.find("zstd") + 3)) = std::byte{'x'};  // zstx
  testing::reseal(file);
  testing::write_file(path, file);
  const auto c = format::Container::open(path);  // the index itself is sound
  const auto message = message_of<CodecError>([&] { (void)read(c, 0, 0); });
  EXPECT_NE(message.find(path + ": offset "), std::string::npos) << message;
  EXPECT_NE(message.find("frame 0 field 'density' chunk"), std::string::npos) << message;
  EXPECT_NE(message.find("unknown stage 'zstx'"), std::string::npos) << message;
  EXPECT_EQ(read(c, 0, 1), velocity(0));  // the other chain still reads
}

TEST_F(ChainFile, AChainIdPastTheTableIsACorruptIndex) {
  write("shuffle|zstd", "split|lz4");
  auto file = testing::read_file(path);
  const auto block = testing::superblock_of(file);
  format::layout::IndexHeader header;
  std::memcpy(&header, file.data() + block.index_offset, sizeof header);
  const std::uint64_t first_chunk = block.index_offset + 64 + 32 * header.field_count + 64 * header.frame_count +
                                    24ull * header.frame_count * header.field_count;
  const std::uint32_t bad = 7;
  std::memcpy(file.data() + first_chunk + 60, &bad, sizeof bad);
  testing::reseal(file);
  testing::write_file(path, file);
  try {
    (void)format::Container::open(path);
    FAIL() << "no error";
  } catch (const CorruptIndexError& error) {
    EXPECT_NE(std::string(error.what()).find("chain id below 2"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace headrace::codec
