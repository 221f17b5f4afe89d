// snappy: one raw Snappy block (no framing), as snappy_compress writes and nvCOMP's batched Snappy
// decodes (docs/codecs/snappy.md).
#include <snappy-c.h>

#include "headrace/error.hpp"
#include "stages.hpp"

namespace headrace::codec::stages {

constexpr CodecFacts snappy_facts{std::nullopt, std::uint64_t{1} << 24};

namespace {

class Snappy final : public CodecStage {
 public:
  explicit Snappy(std::uint64_t block) : CodecStage(block) {}
  std::string_view name() const noexcept override { return "snappy"; }
  std::string configuration() const override { return with_block(""); }
  std::vector<std::byte> encode_block(std::span<const std::byte> raw) const override {
    std::size_t written = snappy_max_compressed_length(raw.size());
    std::vector<std::byte> stored(written);
    const snappy_status status = snappy_compress(reinterpret_cast<const char*>(raw.data()), raw.size(),
                                                 reinterpret_cast<char*>(stored.data()), &written);
    HEADRACE_EXPECT(status == SNAPPY_OK, CodecError, "snappy_compress failed for a chunk of " + std::to_string(raw.size()) + " bytes");
    stored.resize(written);
    return stored;
  }
  void decode_block(std::span<const std::byte> in, std::span<std::byte> out, const std::string& where) const override {
    const auto* source = reinterpret_cast<const char*>(in.data());
    std::size_t length = 0;
    if (snappy_uncompressed_length(source, in.size(), &length) != SNAPPY_OK)
      fail_decode(where, *this, "snappy data of " + std::to_string(out.size()) + " bytes", "a corrupt snappy block");
    expect_decoded(where, *this, length, out.size());
    if (snappy_uncompress(source, in.size(), reinterpret_cast<char*>(out.data()), &length) != SNAPPY_OK)
      fail_decode(where, *this, "snappy data of " + std::to_string(out.size()) + " bytes", "a corrupt snappy block");
    expect_decoded(where, *this, length, out.size());
  }
  shim::NvcompAlgorithm algorithm() const noexcept override { return shim::NvcompAlgorithm::snappy; }
  shim::NvcompOptions compress_options() const override { return {}; }
  shim::NvcompOptions decompress_options() const override { return {}; }
  std::uint64_t max_block_bytes() const noexcept override { return snappy_facts.max_block_bytes; }
};

}  // namespace

std::unique_ptr<Stage> make_snappy(StageConfig& config, const ElementShape&) {
  return std::make_unique<Snappy>(read_block(config, default_block_bytes, snappy_facts.max_block_bytes));
}

extern constexpr StageEntry snappy_stage{"snappy", StageKind::codec, "Snappy block: fast, light",
                                     make_snappy, snappy_facts};

}  // namespace headrace::codec::stages
