#include "headrace/codec/registry.hpp"

#include <iterator>

#include "stages/stages.hpp"

namespace headrace::codec {
namespace {

using enum StageKind;

// One line a stage; docs/codecs/<name>.md describes each.
constexpr StageEntry registry[] = {
    {"split", filter, "interleaved components one after another (xyz xyz -> xx yy zz)", stages::make_split},
    {"shuffle", filter, "byte i of every element together (blosc's and HDF5's shuffle)", stages::make_shuffle},
    {"bitshuffle", filter, "bit planes of each group of 8 elements", stages::make_bitshuffle},
    {"delta", filter, "each element minus the one before it along a row", stages::make_delta},
    {"xor", filter, "each element xor the one before it along a row", stages::make_xor},
    {"lz4", codec, "LZ4 block: fast, light", stages::make_lz4, stages::lz4_facts},
    {"snappy", codec, "Snappy block: fast, light", stages::make_snappy, stages::snappy_facts},
    {"zstd", codec, "Zstandard frame: strong, fast to decode", stages::make_zstd, stages::zstd_facts},
    {"deflate", codec, "raw DEFLATE stream (RFC 1951)", stages::make_deflate, stages::deflate_facts},
    {"gdeflate", codec, "nvCOMP's GPU-friendly DEFLATE, blocks of at most 64 KiB", stages::make_gdeflate, stages::gdeflate_facts},
    {"ans", codec, "nvCOMP's rANS entropy coder, with float16/float32 modes (GPU only)", stages::make_ans, stages::ans_facts},
    {"bitcomp", codec, "nvCOMP's Bitcomp over integers or float bit patterns", stages::make_bitcomp, stages::bitcomp_facts},
    {"bitcomp_lossy", codec, "Bitcomp over floats quantized within an absolute error (lossy)", stages::make_bitcomp_lossy, stages::bitcomp_lossy_facts},
    {"cascaded", codec, "nvCOMP's run-length, delta and bit-packing cascade (GPU only)", stages::make_cascaded, stages::cascaded_facts},
};

}  // namespace

std::span<const StageEntry> stage_registry() noexcept { return registry; }

const StageEntry* find_stage(std::string_view name) noexcept {
  for (const auto& entry : registry)
    if (entry.name == name) return &entry;
  return nullptr;
}

}  // namespace headrace::codec
