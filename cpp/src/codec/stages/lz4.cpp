// lz4: one LZ4 block without a frame header, as LZ4_compress_default writes and nvCOMP's batched LZ4
// decodes; level > 1 writes the same format with LZ4-HC (docs/codecs/lz4.md).
#include <lz4.h>
#include <lz4hc.h>

#include <limits>

#include "headrace/error.hpp"
#include "stages.hpp"

namespace headrace::codec::stages {

constexpr CodecFacts lz4_facts{LevelRange{1, 12, 1}, std::uint64_t{1} << 24};  // 1: fast mode; 2 to 12: LZ4-HC

namespace {

class Lz4 final : public CodecStage {
 public:
  Lz4(int level, std::uint64_t block) : CodecStage(block), level_(level) {}
  std::string_view name() const noexcept override { return "lz4"; }
  std::string configuration() const override { return with_block("level=" + std::to_string(level_)); }
  std::vector<std::byte> encode_block(std::span<const std::byte> raw) const override {
    HEADRACE_EXPECT(raw.size() <= max_block_bytes(), UsageError,
                    "lz4 blocks hold at most " + std::to_string(max_block_bytes()) + " bytes, got " + std::to_string(raw.size()));
    std::vector<std::byte> stored(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(raw.size()))));
    const auto* source = reinterpret_cast<const char*>(raw.data());
    auto* target = reinterpret_cast<char*>(stored.data());
    const int size = static_cast<int>(raw.size()), room = static_cast<int>(stored.size());
    const int written = level_ > 1 ? LZ4_compress_HC(source, target, size, room, level_)
                                   : LZ4_compress_default(source, target, size, room);
    HEADRACE_EXPECT(written > 0, CodecError, "LZ4_compress failed for a chunk of " + std::to_string(raw.size()) + " bytes");
    stored.resize(static_cast<std::size_t>(written));
    return stored;
  }
  void decode_block(std::span<const std::byte> in, std::span<std::byte> out, const std::string& where) const override {
    constexpr auto int_max = static_cast<std::size_t>(std::numeric_limits<int>::max());
    if (in.size() > int_max || out.size() > int_max) fail_decode(where, *this, "a chunk under 2 GiB", std::to_string(out.size()) + " bytes");
    const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(in.data()), reinterpret_cast<char*>(out.data()),
                                        static_cast<int>(in.size()), static_cast<int>(out.size()));
    if (got < 0) fail_decode(where, *this, "lz4 data of " + std::to_string(out.size()) + " bytes", "a corrupt lz4 block");
    expect_decoded(where, *this, static_cast<std::size_t>(got), out.size());
  }
  shim::NvcompAlgorithm algorithm() const noexcept override { return shim::NvcompAlgorithm::lz4; }
  // Both option structs' defaults are zero (data type char, no bitshuffle).
  shim::NvcompOptions compress_options() const override { return {}; }
  shim::NvcompOptions decompress_options() const override { return {}; }
  std::uint64_t max_block_bytes() const noexcept override { return lz4_facts.max_block_bytes; }

 private:
  int level_;
};

}  // namespace

std::unique_ptr<Stage> make_lz4(StageConfig& config, const ElementShape&) {
  static_assert(lz4_facts.levels->most == LZ4HC_CLEVEL_MAX);
  const LevelRange levels = *lz4_facts.levels;
  const int level = static_cast<int>(config.integer("level", levels.fallback, levels.least, levels.most));
  return std::make_unique<Lz4>(level, read_block(config, default_block_bytes, lz4_facts.max_block_bytes));
}

extern constexpr StageEntry lz4_stage{"lz4", StageKind::codec, "LZ4 block: fast, light",
                                     make_lz4, lz4_facts};

}  // namespace headrace::codec::stages
