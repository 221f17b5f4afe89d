// Human-readable byte sizes for reports: "4MiB", "64KiB", "12345B".
#pragma once

#include <cstdint>
#include <string>

namespace headrace::detail {

// Exact: uses the largest binary unit that divides size_bytes, so "3MiB" is never a rounding.
[[nodiscard]] std::string format_byte_size(std::uint64_t size_bytes);

}  // namespace headrace::detail
