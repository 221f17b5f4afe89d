#include "headrace/format/dtype.hpp"

#include "headrace/error.hpp"

namespace headrace::format {

bool is_valid_dtype_code(std::uint8_t code) noexcept { return code >= 1 && code <= 10; }

std::size_t dtype_size(DType dtype) noexcept {
  switch (dtype) {
    case DType::uint8:
    case DType::int8: return 1;
    case DType::uint16:
    case DType::int16: return 2;
    case DType::uint32:
    case DType::int32:
    case DType::float32: return 4;
    case DType::uint64:
    case DType::int64:
    case DType::float64: return 8;
  }
  return 0;
}

const char* to_string(DType dtype) noexcept {
  switch (dtype) {
    case DType::uint8: return "uint8";
    case DType::int8: return "int8";
    case DType::uint16: return "uint16";
    case DType::int16: return "int16";
    case DType::uint32: return "uint32";
    case DType::int32: return "int32";
    case DType::uint64: return "uint64";
    case DType::int64: return "int64";
    case DType::float32: return "float32";
    case DType::float64: return "float64";
  }
  return "?";
}

DType parse_dtype(const std::string& name) {
  for (std::uint8_t code = 1; code <= 10; ++code) {
    auto dtype = static_cast<DType>(code);
    if (name == to_string(dtype)) return dtype;
  }
  throw UsageError("dtype '" + name + "': expected one of uint8 int8 uint16 int16 uint32 int32 uint64 int64 float32 float64");
}

}  // namespace headrace::format
