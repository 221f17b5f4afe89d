// A chain of stages (codec/stage.hpp) that turns a chunk's raw bytes into its stored bytes: filters, then
// exactly one codec, e.g. "split(components=3,width=4)|shuffle(width=4)|zstd(level=3)". It checks its
// order when it is made, encodes on the CPU, decodes on the CPU (the filters undone in reverse order),
// and hands the GPU path its codec and filters. Copies share their stages.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "headrace/codec/stage.hpp"
#include "headrace/format/codec_id.hpp"

namespace headrace::codec {

class Chain {
 public:
  // A chain as a user writes it: stage names joined by '|', each with an optional "(key=value,...)";
  // values left out come from `shape` (shuffle's width is the value size, split's components the
  // field's). "none" is the empty chain. Throws UsageError naming the stage for an unknown name, a value
  // out of range, or an order the chain cannot have (a filter after the codec, two codecs, no codec).
  [[nodiscard]] static Chain parse(std::string_view text, const ElementShape& shape);
  // A chain as the index stores it: every value written (nothing is taken from a shape). Throws
  // CodecError starting with `where` (the file and the chunk or chain) and naming the stage.
  [[nodiscard]] static Chain of_stored(std::string_view spec, const std::string& where);
  // The one-codec chain of a chunk record's plain codec (docs/format.md 5.7); none: the empty chain.
  [[nodiscard]] static Chain of_codec(format::CodecId codec);

  // The canonical text (every value written): what the index stores.
  [[nodiscard]] const std::string& spec() const noexcept { return spec_; }
  [[nodiscard]] bool empty() const noexcept { return codec_ == nullptr; }
  [[nodiscard]] std::span<const std::shared_ptr<const FilterStage>> filters() const noexcept { return filters_; }
  [[nodiscard]] const CodecStage* codec() const noexcept { return codec_.get(); }
  // Set when a stage is lossy: the largest difference between a decoded value and the written one.
  [[nodiscard]] std::optional<double> error_bound() const noexcept { return error_bound_; }
  // The chunk record's codec for this chain: a plain code when the chain is one codec an older reader
  // knows (lz4, zstd, gdeflate; none), else CodecId::chain.
  [[nodiscard]] format::CodecId record_codec() const noexcept;

  // Whether every stage encodes (decodes) on the CPU here; *why names the first that does not.
  [[nodiscard]] bool cpu_encodes(std::string* why) const;
  [[nodiscard]] bool cpu_decodes(std::string* why) const;
  // raw after each filter: what the codec encodes (a codec encoded elsewhere, nvCOMP on a GPU, takes it).
  [[nodiscard]] std::vector<std::byte> filter(std::span<const std::byte> raw) const;
  // Stored bytes of raw: each filter, then the codec.
  [[nodiscard]] std::vector<std::byte> encode(std::span<const std::byte> raw) const;
  // Decodes stored into raw (exactly the chunk's raw size); errors start with `where`.
  void decode(std::span<const std::byte> stored, std::span<std::byte> raw, const std::string& where) const;

 private:
  static Chain assemble(std::vector<std::shared_ptr<const Stage>> stages, const std::string& where, bool stored);
  std::string spec_;
  std::vector<std::shared_ptr<const FilterStage>> filters_;
  std::shared_ptr<const CodecStage> codec_;
  std::optional<double> error_bound_;
};

// The chain of a chunk's coding (format::coding_of): a plain codec's name, or a chain's stored text.
// Made once per process and kept, so the engine resolves a request's chain per chunk cheaply. Throws
// as Chain::of_stored.
[[nodiscard]] const Chain& chunk_chain(const std::string& coding, const std::string& where);

}  // namespace headrace::codec
