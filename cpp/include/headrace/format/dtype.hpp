// Element types a container field may hold; codes are the on-disk values (docs/format.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "headrace/detail/enum_names.hpp"

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
// NumPy's names.
inline constexpr detail::EnumNames<DType, 10> dtype_names{{{DType::uint8, "uint8"},
                                                           {DType::int8, "int8"},
                                                           {DType::uint16, "uint16"},
                                                           {DType::int16, "int16"},
                                                           {DType::uint32, "uint32"},
                                                           {DType::int32, "int32"},
                                                           {DType::uint64, "uint64"},
                                                           {DType::int64, "int64"},
                                                           {DType::float32, "float32"},
                                                           {DType::float64, "float64"}}};

[[nodiscard]] constexpr const char* to_string(DType dtype) noexcept { return detail::name_of(dtype_names, dtype); }
// Throws UsageError naming the choices for a name not in dtype_names.
[[nodiscard]] inline DType parse_dtype(const std::string& name) { return detail::parse_name(dtype_names, name, "dtype"); }

}  // namespace headrace::format
