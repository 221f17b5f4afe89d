#include "headrace/codec/cpu/chunk_codec.hpp"

#include <lz4.h>
#include <lz4hc.h>
#include <zstd.h>

#include <cstring>
#include <limits>

#include "headrace/codec/cpu/gdeflate.hpp"
#include "headrace/error.hpp"

namespace headrace::codec::cpu {

using format::CodecId;

std::vector<std::byte> encode(CodecId codec, int level, std::span<const std::byte> raw) {
  std::vector<std::byte> stored;
  switch (codec) {
    case CodecId::lz4: {
      HEADRACE_EXPECT(raw.size() <= static_cast<std::size_t>(LZ4_MAX_INPUT_SIZE), UsageError,
                      "lz4 chunks hold at most " + std::to_string(LZ4_MAX_INPUT_SIZE) + " bytes, got " + std::to_string(raw.size()));
      stored.resize(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(raw.size()))));
      const auto* source = reinterpret_cast<const char*>(raw.data());
      auto* target = reinterpret_cast<char*>(stored.data());
      // Level > 1 selects LZ4-HC: the same block format, smaller, slower to write only.
      const int written = level > 1 ? LZ4_compress_HC(source, target, static_cast<int>(raw.size()), static_cast<int>(stored.size()), level)
                                    : LZ4_compress_default(source, target, static_cast<int>(raw.size()), static_cast<int>(stored.size()));
      HEADRACE_EXPECT(written > 0, CodecError, "LZ4_compress failed for a chunk of " + std::to_string(raw.size()) + " bytes");
      stored.resize(static_cast<std::size_t>(written));
      return stored;
    }
    case CodecId::zstd: {
      stored.resize(ZSTD_compressBound(raw.size()));
      const std::size_t written = ZSTD_compress(stored.data(), stored.size(), raw.data(), raw.size(),
                                                level == 0 ? ZSTD_CLEVEL_DEFAULT : level);
      HEADRACE_EXPECT(!ZSTD_isError(written), CodecError, std::string("ZSTD_compress failed: ") + ZSTD_getErrorName(written));
      stored.resize(written);
      return stored;
    }
    case CodecId::gdeflate: return gdeflate_encode(level, raw);
    case CodecId::none: break;
  }
  throw UsageError(std::string("no CPU encoder for codec ") + format::to_string(codec));
}

void decode(CodecId codec, std::span<const std::byte> stored, std::span<std::byte> raw, const std::string& path,
            std::uint64_t offset) {
  const std::string expected = std::string(format::to_string(codec)) + " data of " + std::to_string(raw.size()) + " bytes";
  switch (codec) {
    case CodecId::none:
      HEADRACE_EXPECT_DATA(stored.size() == raw.size(), CodecError, path, offset, expected,
                           std::to_string(stored.size()) + " bytes");
      std::memcpy(raw.data(), stored.data(), raw.size());
      return;
    case CodecId::lz4: {
      HEADRACE_EXPECT_DATA(stored.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()) &&
                               raw.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()),
                           CodecError, path, offset, expected, "a chunk over 2 GiB");
      const int got = LZ4_decompress_safe(reinterpret_cast<const char*>(stored.data()), reinterpret_cast<char*>(raw.data()),
                                          static_cast<int>(stored.size()), static_cast<int>(raw.size()));
      HEADRACE_EXPECT_DATA(got == static_cast<int>(raw.size()), CodecError, path, offset, expected,
                           got < 0 ? std::string("a corrupt lz4 block") : std::to_string(got) + " bytes");
      return;
    }
    case CodecId::zstd: {
      const std::size_t got = ZSTD_decompress(raw.data(), raw.size(), stored.data(), stored.size());
      HEADRACE_EXPECT_DATA(!ZSTD_isError(got) && got == raw.size(), CodecError, path, offset, expected,
                           ZSTD_isError(got) ? std::string("a corrupt zstd frame (") + ZSTD_getErrorName(got) + ")"
                                             : std::to_string(got) + " bytes");
      return;
    }
    case CodecId::gdeflate: gdeflate_decode(stored, raw, path, offset); return;
  }
  throw UnavailableError(path + ": offset " + std::to_string(offset) + ": codec code " +
                         std::to_string(static_cast<int>(codec)) + " has no CPU decoder");
}

}  // namespace headrace::codec::cpu
