// ans: nvCOMP's rANS entropy coder, for bytes or, in its float modes, float16 and float32 values
// (nvCOMP 6). nvCOMP has no CPU library for it: only a GPU encodes and decodes it (docs/codecs/ans.md).
#include "stages.hpp"

namespace headrace::codec::stages {

constexpr CodecFacts ans_facts{std::nullopt, std::uint64_t{1} << 24, true};

namespace {

class Ans final : public GpuOnlyCodec {
 public:
  Ans(std::string type, std::uint64_t block) : GpuOnlyCodec(block), type_(std::move(type)) {}
  std::string_view name() const noexcept override { return "ans"; }
  std::string configuration() const override { return with_block("type=" + type_); }
  shim::NvcompAlgorithm algorithm() const noexcept override { return shim::NvcompAlgorithm::ans; }
  // nvcompBatchedANSCompressOpts_t: type rANS (0) at 0, data_type at 4, the rest nvCOMP's defaults (0).
  shim::NvcompOptions compress_options() const override { return shim::NvcompOptions{}.put(4, static_cast<int>(nvcomp_data_type())); }
  // nvcompBatchedANSDecompressOpts_t: data_type at 4 is NVCOMP_TYPE_BITS, read from the stream.
  shim::NvcompOptions decompress_options() const override { return shim::NvcompOptions{}.put(4, static_cast<int>(shim::NvcompType::bits)); }
  std::uint64_t max_block_bytes() const noexcept override { return ans_facts.max_block_bytes; }

 private:
  shim::NvcompType nvcomp_data_type() const noexcept {
    if (type_ == "float32") return shim::NvcompType::float32;
    if (type_ == "float16") return shim::NvcompType::float16;
    return shim::NvcompType::char_;
  }
  std::string type_;
};

}  // namespace

// Default: the float32 mode for float32 fields, bytes otherwise.
std::unique_ptr<Stage> make_ans(StageConfig& config, const ElementShape& shape) {
  const std::string fallback = shape.dtype == format::DType::float32 ? "float32" : "bytes";
  auto type = config.choice("type", fallback, {"bytes", "float16", "float32"});
  return std::make_unique<Ans>(std::move(type), read_block(config, default_block_bytes, ans_facts.max_block_bytes));
}

extern constexpr StageEntry ans_stage{"ans", StageKind::codec, "nvCOMP's rANS entropy coder, with float16/float32 modes (GPU only)",
                                     make_ans, ans_facts};

}  // namespace headrace::codec::stages
