// Checksums of stored chunk bytes and of the index (XXH3-64, seed 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace headrace::format {

[[nodiscard]] std::uint64_t xxh3_64(std::span<const std::byte> bytes) noexcept;

}  // namespace headrace::format
