// The stages headrace knows, by the name the index stores (docs/codecs/<name>.md each): adding a stage
// is its file in cpp/src/codec/stages/, its page, and its line in the table of registry.cpp.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "headrace/codec/stage.hpp"

namespace headrace::codec {

struct StageEntry {
  std::string_view name;
  StageKind kind;
  std::string_view summary;  // one line: what it does, for `headrace codecs` and errors
  // Reads the configuration (defaults from shape); throws UsageError for a value out of range.
  std::unique_ptr<Stage> (*make)(StageConfig& config, const ElementShape& shape);
};

[[nodiscard]] std::span<const StageEntry> stage_registry() noexcept;
// The entry named `name`, or nullptr.
[[nodiscard]] const StageEntry* find_stage(std::string_view name) noexcept;

}  // namespace headrace::codec
