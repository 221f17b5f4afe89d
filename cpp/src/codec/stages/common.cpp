#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "headrace/error.hpp"
#include "stages.hpp"

namespace headrace::codec::stages {

const std::vector<std::string>& integer_type_names() {
  static const std::vector<std::string> names = {"u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64"};
  return names;
}

IntegerType integer_type(const std::string& name) {
  const auto& names = integer_type_names();
  const auto at = static_cast<std::size_t>(std::find(names.begin(), names.end(), name) - names.begin());
  HEADRACE_EXPECT(at < names.size(), UsageError, "integer type '" + name + "' is not one of u8 i8 u16 i16 u32 i32 u64 i64");
  return {name, 1u << (at / 2), at % 2 == 1};
}

std::string default_integer_type(const ElementShape& shape) {
  using format::DType;
  switch (shape.dtype) {
    case DType::int8: return "i8";
    case DType::int16: return "i16";
    case DType::int32: return "i32";
    case DType::int64: return "i64";
    case DType::uint16: return "u16";
    case DType::uint32:
    case DType::float32: return "u32";
    case DType::uint64:
    case DType::float64: return "u64";
    case DType::uint8: break;
  }
  return "u8";
}

shim::NvcompType nvcomp_type(const IntegerType& type) {
  using shim::NvcompType;
  switch (type.bytes) {
    case 1: return type.is_signed ? NvcompType::char_ : NvcompType::uchar;
    case 2: return type.is_signed ? NvcompType::short_ : NvcompType::ushort;
    case 4: return type.is_signed ? NvcompType::int_ : NvcompType::uint;
    default: return type.is_signed ? NvcompType::longlong : NvcompType::ulonglong;
  }
}

std::string shortest_text(double value) {
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

void fail_decode(const std::string& where, const Stage& stage, const std::string& expected, const std::string& found) {
  throw CodecError(stage_context(where, stage) + ": expected " + expected + ", found " + found);
}

void expect_decoded(const std::string& where, const Stage& stage, std::size_t decoded, std::size_t expected) {
  if (decoded != expected)
    fail_decode(where, stage, std::to_string(expected) + " decoded bytes", std::to_string(decoded) + " bytes");
}

namespace {

std::string why_gpu_only(const Stage& stage) {
  return stage.spec() + ": nvCOMP 6 has no CPU library for it (only its GPU kernels encode and decode it); read the file "
                        "on a machine with a GPU, or re-compress it there with a chain of CPU codecs (headrace compress)";
}

}  // namespace

bool GpuOnlyCodec::cpu_encodes(std::string* why) const {
  if (why != nullptr) *why = why_gpu_only(*this);
  return false;
}

bool GpuOnlyCodec::cpu_decodes(std::string* why) const { return cpu_encodes(why); }

std::vector<std::byte> GpuOnlyCodec::encode_block(std::span<const std::byte>) const { throw UnavailableError(why_gpu_only(*this)); }

void GpuOnlyCodec::decode_block(std::span<const std::byte>, std::span<std::byte>, const std::string& where) const {
  throw UnavailableError(where + ": " + why_gpu_only(*this));
}

}  // namespace headrace::codec::stages
