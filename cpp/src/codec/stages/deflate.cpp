// deflate: one raw DEFLATE stream (RFC 1951, no zlib or gzip header), as zlib writes with window bits
// -15 and nvCOMP's batched Deflate decodes (docs/codecs/deflate.md).
#include <zlib.h>

#include <limits>

#include "headrace/error.hpp"
#include "stages.hpp"

namespace headrace::codec::stages {

constexpr CodecFacts deflate_facts{LevelRange{1, 9, 6}, std::uint64_t{1} << 31};

namespace {

class Deflate final : public CodecStage {
 public:
  Deflate(int level, std::uint64_t block) : CodecStage(block), level_(level) {}
  std::string_view name() const noexcept override { return "deflate"; }
  std::string configuration() const override { return with_block("level=" + std::to_string(level_)); }
  std::vector<std::byte> encode_block(std::span<const std::byte> raw) const override {
    HEADRACE_EXPECT(raw.size() <= max_block_bytes(), UsageError,
                    "deflate blocks hold at most " + std::to_string(max_block_bytes()) + " bytes");
    z_stream stream{};
    HEADRACE_EXPECT(deflateInit2(&stream, level_, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK, CodecError,
                    "deflateInit2 failed");
    std::vector<std::byte> stored(deflateBound(&stream, static_cast<uLong>(raw.size())));
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(raw.data()));
    stream.avail_in = static_cast<uInt>(raw.size());
    stream.next_out = reinterpret_cast<Bytef*>(stored.data());
    stream.avail_out = static_cast<uInt>(stored.size());
    const int status = ::deflate(&stream, Z_FINISH);
    stored.resize(stream.total_out);
    deflateEnd(&stream);
    HEADRACE_EXPECT(status == Z_STREAM_END, CodecError, "deflate failed for a chunk of " + std::to_string(raw.size()) + " bytes");
    return stored;
  }
  void decode_block(std::span<const std::byte> in, std::span<std::byte> out, const std::string& where) const override {
    constexpr auto uint_max = static_cast<std::size_t>(std::numeric_limits<uInt>::max());
    if (in.size() > uint_max || out.size() > uint_max) fail_decode(where, *this, "a chunk under 4 GiB", std::to_string(out.size()));
    z_stream stream{};
    HEADRACE_EXPECT(inflateInit2(&stream, -15) == Z_OK, CodecError, "inflateInit2 failed");
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
    stream.avail_in = static_cast<uInt>(in.size());
    stream.next_out = reinterpret_cast<Bytef*>(out.data());
    stream.avail_out = static_cast<uInt>(out.size());
    const int status = inflate(&stream, Z_FINISH);
    const std::size_t decoded = stream.total_out;
    inflateEnd(&stream);
    if (status != Z_STREAM_END)
      fail_decode(where, *this, "deflate data of " + std::to_string(out.size()) + " bytes",
                  status == Z_BUF_ERROR ? "more than " + std::to_string(out.size()) + " bytes, or a cut stream"
                                        : "a corrupt deflate stream (zlib status " + std::to_string(status) + ")");
    expect_decoded(where, *this, decoded, out.size());
  }
  shim::NvcompAlgorithm algorithm() const noexcept override { return shim::NvcompAlgorithm::deflate; }
  // nvcompBatchedDeflateCompressOpts_t: algorithm 1 (high throughput), nvCOMP's default.
  shim::NvcompOptions compress_options() const override { return shim::NvcompOptions{}.put(0, 1); }
  shim::NvcompOptions decompress_options() const override { return {}; }
  std::uint64_t max_block_bytes() const noexcept override { return deflate_facts.max_block_bytes; }

 private:
  int level_;
};

}  // namespace

std::unique_ptr<Stage> make_deflate(StageConfig& config, const ElementShape&) {
  const LevelRange levels = *deflate_facts.levels;
  const int level = static_cast<int>(config.integer("level", levels.fallback, levels.least, levels.most));
  return std::make_unique<Deflate>(level, read_block(config, default_block_bytes, deflate_facts.max_block_bytes));
}

extern constexpr StageEntry deflate_stage{"deflate", StageKind::codec, "raw DEFLATE stream (RFC 1951)",
                                     make_deflate, deflate_facts};

}  // namespace headrace::codec::stages
