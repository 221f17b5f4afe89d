// CPU encoders and decoders of the plain chunk codecs of docs/format.md 5.7 (lz4, zstd, gdeflate): their
// one-stage chains (codec/chain.hpp), named by the chunk record's code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "headrace/format/codec_id.hpp"

namespace headrace::codec::cpu {

// Stored bytes of raw under codec (not none); level 0 is the codec's default.
[[nodiscard]] std::vector<std::byte> encode(format::CodecId codec, int level, std::span<const std::byte> raw);

// Decodes stored into raw, which has exactly the chunk's raw size; throws CodecError naming path and
// offset (the chunk's file offset) when the bytes do not decode to exactly raw.size() bytes.
void decode(format::CodecId codec, std::span<const std::byte> stored, std::span<std::byte> raw,
            const std::string& path, std::uint64_t offset);

}  // namespace headrace::codec::cpu
