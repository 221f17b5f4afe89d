// Element types a container field may hold; codes are the on-disk values (docs/format.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace headrace::format {

enum class DType : std::uint8_t {
  uint8 = 1,
  int8 = 2,
  uint16 = 3,
  int16 = 4,
  uint32 = 5,
  int32 = 6,
  uint64 = 7,
  int64 = 8,
  float32 = 9,
  float64 = 10,
};

[[nodiscard]] bool is_valid_dtype_code(std::uint8_t code) noexcept;
[[nodiscard]] std::size_t dtype_size(DType dtype) noexcept;
// NumPy's name for it: "float32", "uint8", ...
[[nodiscard]] const char* to_string(DType dtype) noexcept;
// Accepts NumPy names; throws UsageError otherwise.
[[nodiscard]] DType parse_dtype(const std::string& name);

}  // namespace headrace::format
