#include "headrace/format/dtype.hpp"

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

}  // namespace headrace::format
