// gdeflate: one nvCOMP GDeflate chunk of at most 64 KiB raw, encoded and decoded on the CPU by nvCOMP's
// CPU library (docs/codecs/gdeflate.md).
#include "headrace/codec/cpu/gdeflate.hpp"
#include "headrace/error.hpp"
#include "stages.hpp"

namespace headrace::codec::stages {

constexpr CodecFacts gdeflate_facts{LevelRange{1, 12, cpu::gdeflate_default_level}, cpu::gdeflate_max_raw_chunk_bytes};

namespace {

constexpr std::uint64_t gdeflate_block_bytes = std::uint64_t{1} << 15;

class Gdeflate final : public CodecStage {
 public:
  Gdeflate(int level, std::uint64_t block) : CodecStage(block), level_(level) {}
  std::string_view name() const noexcept override { return "gdeflate"; }
  std::string configuration() const override { return with_block("level=" + std::to_string(level_)); }
  bool cpu_encodes(std::string* why) const override { return cpu::gdeflate_available(why); }
  bool cpu_decodes(std::string* why) const override { return cpu::gdeflate_available(why); }
  std::vector<std::byte> encode_block(std::span<const std::byte> raw) const override { return cpu::gdeflate_encode(level_, raw); }
  void decode_block(std::span<const std::byte> in, std::span<std::byte> out, const std::string& where) const override {
    cpu::gdeflate_decode(in, out, stage_context(where, *this), 0);
  }
  shim::NvcompAlgorithm algorithm() const noexcept override { return shim::NvcompAlgorithm::gdeflate; }
  // nvcompBatchedGdeflateCompressOpts_t: algorithm 1 (high throughput), nvCOMP's default.
  shim::NvcompOptions compress_options() const override { return shim::NvcompOptions{}.put(0, 1); }
  shim::NvcompOptions decompress_options() const override { return {}; }
  std::uint64_t max_block_bytes() const noexcept override { return gdeflate_facts.max_block_bytes; }

 private:
  int level_;
};

}  // namespace

std::unique_ptr<Stage> make_gdeflate(StageConfig& config, const ElementShape&) {
  const LevelRange levels = *gdeflate_facts.levels;
  const int level = static_cast<int>(config.integer("level", levels.fallback, levels.least, levels.most));
  // 32 KiB blocks: nvCOMP's CPU encoder refuses some blocks of a full 64 KiB (shuffled floats:
  // "Failed to compress chunk", status 19).
  return std::make_unique<Gdeflate>(level, read_block(config, gdeflate_block_bytes, gdeflate_facts.max_block_bytes));
}

extern constexpr StageEntry gdeflate_stage{"gdeflate", StageKind::codec, "nvCOMP's GPU-friendly DEFLATE, blocks of at most 64 KiB",
                                     make_gdeflate, gdeflate_facts};

}  // namespace headrace::codec::stages
