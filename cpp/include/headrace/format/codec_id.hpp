// Codec and checksum identifiers as stored in chunk records (docs/format.md 5.5, 5.7).
// The codecs themselves live in the codec layer; the format only names them.
#pragma once

#include <cstdint>
#include <string>

namespace headrace::format {

// chain (format 1.3): the chunk's stored bytes come from the chain its record names (5.5, 5.10).
enum class CodecId : std::uint8_t { none = 0, lz4 = 1, zstd = 2, gdeflate = 3, chain = 4 };
enum class ChecksumKind : std::uint8_t { xxh3_64 = 1, crc32c = 2 };

// A gdeflate chunk holds at most this many raw bytes (docs/codecs/gdeflate.md: nvCOMP's CPU encoder).
inline constexpr std::uint64_t gdeflate_max_chunk_bytes = std::uint64_t{1} << 16;

[[nodiscard]] const char* to_string(CodecId codec) noexcept;
// Parses "none" | "lz4" | "zstd" | "gdeflate" | "chain"; throws UsageError otherwise.
[[nodiscard]] CodecId parse_codec(const std::string& name);

}  // namespace headrace::format
