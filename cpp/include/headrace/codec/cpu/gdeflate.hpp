// GDeflate on the CPU through nvCOMP's CPU library (libnvcomp_cpu, loaded at run time): the stored
// form nvCOMP's batched GDeflate decodes on the GPU (docs/codecs/gdeflate.md). nvCOMP's CPU encoder
// takes raw chunks of at most 64 KiB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "headrace/format/codec_id.hpp"

namespace headrace::codec::cpu {

// The largest raw chunk gdeflate_encode() takes (nvcompGdeflateCPUCompressionMaxAllowedChunkSize).
inline constexpr std::size_t gdeflate_max_raw_chunk_bytes = format::gdeflate_max_chunk_bytes;
// The level that level 0 selects (libdeflate's default: 1 is fastest, 12 smallest).
inline constexpr int gdeflate_default_level = 6;

// Whether libnvcomp_cpu with its GDeflate functions is here; when not, *why says what is missing.
[[nodiscard]] bool gdeflate_available(std::string* why);

// Stored bytes of raw (1 to gdeflate_max_raw_chunk_bytes bytes) at level 1..12, 0 for the default.
// Throws UnavailableError without libnvcomp_cpu, UsageError for a bad size or level. Thread-safe: calls
// take turns (nvCOMP's CPU compressor is not safe to run on two threads at once).
[[nodiscard]] std::vector<std::byte> gdeflate_encode(int level, std::span<const std::byte> raw);

// Decodes stored into raw, which has exactly the chunk's raw size; throws CodecError naming path and
// offset when the bytes do not decode to exactly raw.size() bytes, UnavailableError without
// libnvcomp_cpu. Thread-safe.
void gdeflate_decode(std::span<const std::byte> stored, std::span<std::byte> raw, const std::string& path,
                     std::uint64_t offset);

}  // namespace headrace::codec::cpu
