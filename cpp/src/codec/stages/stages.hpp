// What several stages share (each stage is one file in this folder, with its registry entry: its name,
// kind, summary, make function and facts, which registry.cpp lists).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "headrace/codec/cpu/gdeflate.hpp"
#include "headrace/codec/registry.hpp"
#include "headrace/codec/stage.hpp"

namespace headrace::codec::stages {

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
