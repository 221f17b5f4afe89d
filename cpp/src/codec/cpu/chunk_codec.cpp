#include "headrace/codec/cpu/chunk_codec.hpp"

#include "headrace/codec/chain.hpp"
#include "headrace/error.hpp"

namespace headrace::codec::cpu {

std::vector<std::byte> encode(format::CodecId codec, int level, std::span<const std::byte> raw) {
  HEADRACE_EXPECT(codec != format::CodecId::none && codec != format::CodecId::chain, UsageError,
                  std::string("no plain encoder for codec ") + format::to_string(codec));
  const std::string name = format::to_string(codec);
  return Chain::parse(level == 0 ? name : name + "(level=" + std::to_string(level) + ")", ElementShape{}).encode(raw);
}

void decode(format::CodecId codec, std::span<const std::byte> stored, std::span<std::byte> raw, const std::string& path,
            std::uint64_t offset) {
  const std::string where = path + ": offset " + std::to_string(offset);
  if (codec == format::CodecId::none) {
    HEADRACE_EXPECT_DATA(stored.size() == raw.size(), CodecError, path, offset, "raw data of " + std::to_string(raw.size()) + " bytes",
                         std::to_string(stored.size()) + " bytes");
    std::copy(stored.begin(), stored.end(), raw.begin());
    return;
  }
  HEADRACE_EXPECT(codec != format::CodecId::chain, UsageError, where + ": a chain chunk decodes through its Chain");
  Chain::of_codec(codec).decode(stored, raw, where);
}

}  // namespace headrace::codec::cpu
