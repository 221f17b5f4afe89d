// The stages headrace knows, by the name the index stores (docs/codecs/<name>.md each): adding a stage
// is its file in cpp/src/codec/stages/, its page, and its line in the table of registry.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>

#include "headrace/codec/stage.hpp"

namespace headrace::codec {

// A codec's key `level`: the least, the most and the default.
struct LevelRange {
  int least, most, fallback;
};

// What a codec stage is whatever its configuration: what its class and make function read, and what
// the bindings tell Python.
struct CodecFacts {
  std::optional<LevelRange> levels;   // nullopt: it has no level
  std::uint64_t max_block_bytes = 0;  // the largest raw block it encodes (nvCOMP's limit, or the CPU encoder's)
  bool gpu_only = false;              // no CPU library: only nvCOMP on a GPU encodes and decodes it
  bool lossy = false;                 // decodes values within an error bound, not the bytes written
};

struct StageEntry {
  std::string_view name;
  StageKind kind;
  std::string_view summary;  // one line: what it does, for `headrace codecs` and errors
  // Reads the configuration (defaults from shape); throws UsageError for a value out of range.
  std::unique_ptr<Stage> (*make)(StageConfig& config, const ElementShape& shape);
  std::optional<CodecFacts> codec = std::nullopt;  // set for a codec
};

[[nodiscard]] std::span<const StageEntry> stage_registry() noexcept;
// The entry named `name`, or nullptr.
[[nodiscard]] const StageEntry* find_stage(std::string_view name) noexcept;

}  // namespace headrace::codec
