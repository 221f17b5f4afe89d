// zstd: one Zstandard frame with its content size, as ZSTD_compress writes and nvCOMP's batched Zstd
// decodes (docs/codecs/zstd.md).
#include <zstd.h>

#include "headrace/error.hpp"
#include "stages.hpp"

namespace headrace::codec::stages {

constexpr CodecFacts zstd_facts{LevelRange{1, 22, 3}, (std::uint64_t{1} << 31) - 1};

namespace {

class Zstd final : public CodecStage {
 public:
  Zstd(int level, std::uint64_t block) : CodecStage(block), level_(level) {}
  std::string_view name() const noexcept override { return "zstd"; }
  std::string configuration() const override { return with_block("level=" + std::to_string(level_)); }
  std::vector<std::byte> encode_block(std::span<const std::byte> raw) const override {
    std::vector<std::byte> stored(ZSTD_compressBound(raw.size()));
    const std::size_t written = ZSTD_compress(stored.data(), stored.size(), raw.data(), raw.size(), level_);
    HEADRACE_EXPECT(!ZSTD_isError(written), CodecError, std::string("ZSTD_compress failed: ") + ZSTD_getErrorName(written));
    stored.resize(written);
    return stored;
  }
  void decode_block(std::span<const std::byte> in, std::span<std::byte> out, const std::string& where) const override {
    const std::size_t got = ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
    if (ZSTD_isError(got))
      fail_decode(where, *this, "zstd data of " + std::to_string(out.size()) + " bytes",
                  std::string("a corrupt zstd frame (") + ZSTD_getErrorName(got) + ")");
    expect_decoded(where, *this, got, out.size());
  }
  shim::NvcompAlgorithm algorithm() const noexcept override { return shim::NvcompAlgorithm::zstd; }
  shim::NvcompOptions compress_options() const override { return {}; }
  shim::NvcompOptions decompress_options() const override { return {}; }
  std::uint64_t max_block_bytes() const noexcept override { return zstd_facts.max_block_bytes; }

 private:
  int level_;
};

}  // namespace

std::unique_ptr<Stage> make_zstd(StageConfig& config, const ElementShape&) {
  static_assert(zstd_facts.levels->fallback == ZSTD_CLEVEL_DEFAULT);
  const LevelRange levels = *zstd_facts.levels;
  const int level = static_cast<int>(config.integer("level", levels.fallback, levels.least, levels.most));
  return std::make_unique<Zstd>(level, read_block(config, default_block_bytes, zstd_facts.max_block_bytes));
}

extern constexpr StageEntry zstd_stage{"zstd", StageKind::codec, "Zstandard frame: strong, fast to decode",
                                     make_zstd, zstd_facts};

}  // namespace headrace::codec::stages
