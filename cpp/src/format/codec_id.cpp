#include "headrace/format/codec_id.hpp"

#include "headrace/error.hpp"

namespace headrace::format {

const char* to_string(CodecId codec) noexcept {
  switch (codec) {
    case CodecId::none: return "none";
    case CodecId::lz4: return "lz4";
    case CodecId::zstd: return "zstd";
    case CodecId::gdeflate: return "gdeflate";
    case CodecId::chain: return "chain";
  }
  return "?";
}

CodecId parse_codec(const std::string& name) {
  if (name == "none") return CodecId::none;
  if (name == "lz4") return CodecId::lz4;
  if (name == "zstd") return CodecId::zstd;
  if (name == "gdeflate") return CodecId::gdeflate;
  if (name == "chain") return CodecId::chain;
  throw UsageError("codec '" + name + "': expected none|lz4|zstd|gdeflate|chain");
}

}  // namespace headrace::format
