// cascaded: nvCOMP's run-length, delta and bit-packing cascade over integers (floats as their bit
// patterns). nvCOMP has no CPU library for it: only a GPU encodes and decodes it (docs/codecs/cascaded.md).
#include "stages.hpp"

namespace headrace::codec::stages {

constexpr CodecFacts cascaded_facts{std::nullopt, std::uint64_t{1} << 24, true};

namespace {

class Cascaded final : public GpuOnlyCodec {
 public:
  Cascaded(IntegerType type, std::uint64_t block) : GpuOnlyCodec(block), type_(std::move(type)) {}
  std::string_view name() const noexcept override { return "cascaded"; }
  std::string configuration() const override { return with_block("type=" + type_.name); }
  shim::NvcompAlgorithm algorithm() const noexcept override { return shim::NvcompAlgorithm::cascaded; }
  // nvcompBatchedCascadedCompressOpts_t, nvCOMP's defaults but the type: common options {data_type 0,
  // mode asymmetric (1) 4, terminal codec bitpack (1) 8, coarse encodings none 16}, fine-grained
  // encodings all (7) 24, level 3 at 32.
  shim::NvcompOptions compress_options() const override {
    return shim::NvcompOptions{}
        .put(0, static_cast<int>(nvcomp_type(type_)))
        .put(4, 1)
        .put(8, std::uint64_t{1})
        .put(24, std::uint64_t{7})
        .put(32, std::uint8_t{3});
  }
  // nvcompBatchedCascadedDecompressOpts_t: backend 0, common options at 8 unspecified (data type BITS).
  shim::NvcompOptions decompress_options() const override { return shim::NvcompOptions{}.put(8, static_cast<int>(shim::NvcompType::bits)); }
  std::uint64_t max_block_bytes() const noexcept override { return cascaded_facts.max_block_bytes; }

 private:
  IntegerType type_;
};

}  // namespace

std::unique_ptr<Stage> make_cascaded(StageConfig& config, const ElementShape& shape) {
  auto type = integer_type(config.choice("type", default_integer_type(shape), integer_type_names()));
  return std::make_unique<Cascaded>(std::move(type), read_block(config, default_block_bytes, cascaded_facts.max_block_bytes));
}

extern constexpr StageEntry cascaded_stage{"cascaded", StageKind::codec, "nvCOMP's run-length, delta and bit-packing cascade (GPU only)",
                                     make_cascaded, cascaded_facts};

}  // namespace headrace::codec::stages
