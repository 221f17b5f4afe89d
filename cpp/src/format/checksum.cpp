#include "headrace/format/checksum.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace headrace::format {

std::uint64_t xxh3_64(std::span<const std::byte> bytes) noexcept {
  return XXH3_64bits(bytes.data(), bytes.size());
}

}  // namespace headrace::format
