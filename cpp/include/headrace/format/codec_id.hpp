// Codec and checksum identifiers as stored in chunk records (docs/format.md 5.5, 5.7).
// The codecs themselves live in the codec layer; the format only names them.
#pragma once

#include <cstdint>
#include <string>

#include "headrace/detail/enum_names.hpp"

namespace headrace::format {

// chain (format 1.3): the chunk's stored bytes come from the chain its record names (5.5, 5.10).
enum class CodecId : std::uint8_t { none = 0, lz4 = 1, zstd = 2, gdeflate = 3, chain = 4 };
enum class ChecksumKind : std::uint8_t { xxh3_64 = 1, crc32c = 2 };

// A gdeflate chunk holds at most this many raw bytes (docs/codecs/gdeflate.md: nvCOMP's CPU encoder).
inline constexpr std::uint64_t gdeflate_max_chunk_bytes = std::uint64_t{1} << 16;

inline constexpr detail::EnumNames<CodecId, 5> codec_id_names{{
    {CodecId::none, "none"}, {CodecId::lz4, "lz4"}, {CodecId::zstd, "zstd"}, {CodecId::gdeflate, "gdeflate"}, {CodecId::chain, "chain"}}};

[[nodiscard]] constexpr const char* to_string(CodecId codec) noexcept { return detail::name_of(codec_id_names, codec); }
// Throws UsageError naming the choices for a name not in codec_id_names.
[[nodiscard]] inline CodecId parse_codec(const std::string& name) { return detail::parse_name(codec_id_names, name, "codec"); }

}  // namespace headrace::format
