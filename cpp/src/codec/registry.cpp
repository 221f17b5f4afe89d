#include "headrace/codec/registry.hpp"

#include <iterator>

namespace headrace::codec {
namespace stages {
// Defined beside each stage (stages/<file>.cpp): its name, kind, summary, maker and facts.
extern const StageEntry split_stage;
extern const StageEntry shuffle_stage;
extern const StageEntry bitshuffle_stage;
extern const StageEntry delta_stage;
extern const StageEntry xor_stage;
extern const StageEntry lz4_stage;
extern const StageEntry snappy_stage;
extern const StageEntry zstd_stage;
extern const StageEntry deflate_stage;
extern const StageEntry gdeflate_stage;
extern const StageEntry ans_stage;
extern const StageEntry bitcomp_stage;
extern const StageEntry bitcomp_lossy_stage;
extern const StageEntry cascaded_stage;
}  // namespace stages

namespace {

// One line a stage (and its declaration above); docs/codecs/<name>.md describes each.
const StageEntry registry[] = {
    stages::split_stage,
    stages::shuffle_stage,
    stages::bitshuffle_stage,
    stages::delta_stage,
    stages::xor_stage,
    stages::lz4_stage,
    stages::snappy_stage,
    stages::zstd_stage,
    stages::deflate_stage,
    stages::gdeflate_stage,
    stages::ans_stage,
    stages::bitcomp_stage,
    stages::bitcomp_lossy_stage,
    stages::cascaded_stage,
};

}  // namespace

std::span<const StageEntry> stage_registry() noexcept { return registry; }

const StageEntry* find_stage(std::string_view name) noexcept {
  for (const auto& entry : registry)
    if (entry.name == name) return &entry;
  return nullptr;
}

}  // namespace headrace::codec
