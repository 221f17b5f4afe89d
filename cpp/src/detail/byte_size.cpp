#include "headrace/detail/byte_size.hpp"

namespace headrace::detail {

std::string format_byte_size(std::uint64_t size_bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t unit = 0;
  while (unit + 1 < std::size(units) && size_bytes != 0 && size_bytes % 1024 == 0) {
    size_bytes /= 1024;
    ++unit;
  }
  return std::to_string(size_bytes) + units[unit];
}

}  // namespace headrace::detail
