// The make functions of the stages (one file each in this folder), which registry.cpp lists, and what
// several of them share.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "headrace/codec/cpu/gdeflate.hpp"
#include "headrace/codec/registry.hpp"
#include "headrace/codec/stage.hpp"

namespace headrace::codec::stages {

std::unique_ptr<Stage> make_split(StageConfig& config, const ElementShape& shape);
std::unique_ptr<Stage> make_shuffle(StageConfig& config, const ElementShape& shape);
std::unique_ptr<Stage> make_bitshuffle(StageConfig& config, const ElementShape& shape);
std::unique_ptr<Stage> make_delta(StageConfig& config, const ElementShape& shape);
std::unique_ptr<Stage> make_xor(StageConfig& config, const ElementShape& shape);
std::unique_ptr<Stage> make_lz4(StageConfig& config, const ElementShape& shape);
std::unique_ptr<Stage> make_zstd(StageConfig& config, const ElementShape& shape);
std::unique_ptr<Stage> make_gdeflate(StageConfig& config, const ElementShape& shape);
std::unique_ptr<Stage> make_snappy(StageConfig& config, const ElementShape& shape);
std::unique_ptr<Stage> make_deflate(StageConfig& config, const ElementShape& shape);
std::unique_ptr<Stage> make_ans(StageConfig& config, const ElementShape& shape);
std::unique_ptr<Stage> make_bitcomp(StageConfig& config, const ElementShape& shape);
std::unique_ptr<Stage> make_bitcomp_lossy(StageConfig& config, const ElementShape& shape);
std::unique_ptr<Stage> make_cascaded(StageConfig& config, const ElementShape& shape);

// Each codec's facts, which its class and make function read and registry.cpp lists.
inline constexpr CodecFacts lz4_facts{LevelRange{1, 12, 1}, std::uint64_t{1} << 24};  // 1: fast mode; 2 to 12: LZ4-HC
inline constexpr CodecFacts zstd_facts{LevelRange{1, 22, 3}, (std::uint64_t{1} << 31) - 1};
inline constexpr CodecFacts deflate_facts{LevelRange{1, 9, 6}, std::uint64_t{1} << 31};
inline constexpr CodecFacts gdeflate_facts{LevelRange{1, 12, cpu::gdeflate_default_level}, cpu::gdeflate_max_raw_chunk_bytes};
inline constexpr CodecFacts snappy_facts{std::nullopt, std::uint64_t{1} << 24};
inline constexpr CodecFacts ans_facts{std::nullopt, std::uint64_t{1} << 24, true};
inline constexpr CodecFacts bitcomp_facts{std::nullopt, std::uint64_t{1} << 24};
inline constexpr CodecFacts bitcomp_lossy_facts{std::nullopt, bitcomp_facts.max_block_bytes, false, true};
inline constexpr CodecFacts cascaded_facts{std::nullopt, std::uint64_t{1} << 24, true};

// Integer types as stages name them (bitcomp, cascaded): u8 i8 u16 i16 u32 i32 u64 i64.
struct IntegerType {
  std::string name;
  std::uint32_t bytes;
  bool is_signed;
};
[[nodiscard]] const std::vector<std::string>& integer_type_names();
[[nodiscard]] IntegerType integer_type(const std::string& name);
// The integer type a field's values are read as by default: their own for integers, unsigned of the
// same size for floats (bit patterns).
[[nodiscard]] std::string default_integer_type(const ElementShape& shape);
// The shortest decimal text that reads back as exactly `value` ("0.1", not "0.10000000000000001").
[[nodiscard]] std::string shortest_text(double value);

// nvcompType_t of an integer type.
[[nodiscard]] shim::NvcompType nvcomp_type(const IntegerType& type);

// CodecError "<where>: stage <spec>: expected <expected>, found <found>".
[[noreturn]] void fail_decode(const std::string& where, const Stage& stage, const std::string& expected,
                              const std::string& found);
// Throws CodecError like fail_decode unless out has exactly `decoded` bytes.
void expect_decoded(const std::string& where, const Stage& stage, std::size_t decoded, std::size_t expected);
// A codec of nvCOMP's with no CPU library (ans, cascaded): the CPU neither encodes nor decodes it, and
// says why naming the stage.
class GpuOnlyCodec : public CodecStage {
 public:
  explicit GpuOnlyCodec(std::uint64_t block) : CodecStage(block) {}
  bool cpu_encodes(std::string* why) const final;
  bool cpu_decodes(std::string* why) const final;

 protected:
  std::vector<std::byte> encode_block(std::span<const std::byte> raw) const final;
  void decode_block(std::span<const std::byte> in, std::span<std::byte> out, const std::string& where) const final;
};

}  // namespace headrace::codec::stages
