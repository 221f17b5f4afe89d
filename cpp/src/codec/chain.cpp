#include "headrace/codec/chain.hpp"

#include <map>
#include <mutex>
#include <utility>

#include "headrace/codec/registry.hpp"
#include "headrace/error.hpp"

namespace headrace::codec {
namespace {

struct WrittenStage {
  std::string name, configuration;
};

// "a|b(k=v,k=v)|c" into its stages; parentheses hold no '|'.
std::vector<WrittenStage> split_stages(std::string_view text) {
  std::vector<WrittenStage> stages;
  std::size_t at = 0;
  while (true) {
    const std::size_t bar = std::min(text.find('|', at), text.size());
    std::string_view piece = text.substr(at, bar - at);
    while (!piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
    while (!piece.empty() && piece.back() == ' ') piece.remove_suffix(1);
    HEADRACE_EXPECT(!piece.empty(), UsageError, "chain '" + std::string(text) + "' has an empty stage");
    const std::size_t open = piece.find('(');
    WrittenStage stage;
    if (open == std::string_view::npos) {
      stage.name = std::string(piece);
    } else {
      HEADRACE_EXPECT(piece.back() == ')', UsageError,
                      "chain '" + std::string(text) + "': stage '" + std::string(piece) + "' lacks its ')'");
      stage.name = std::string(piece.substr(0, open));
      stage.configuration = std::string(piece.substr(open + 1, piece.size() - open - 2));
    }
    while (!stage.name.empty() && stage.name.back() == ' ') stage.name.pop_back();
    stages.push_back(std::move(stage));
    if (bar == text.size()) return stages;
    at = bar + 1;
  }
}

bool is_plain_codec(const std::string& name) {
  for (const auto plain : {format::CodecId::lz4, format::CodecId::zstd, format::CodecId::gdeflate})
    if (name == format::to_string(plain)) return true;
  return false;
}

std::string known_stages() {
  std::string names;
  for (const auto& entry : stage_registry()) names += (names.empty() ? "" : ", ") + std::string(entry.name);
  return names;
}

std::shared_ptr<const Stage> make_stage(const WrittenStage& written, const ElementShape& shape, bool stored) {
  const StageEntry* entry = find_stage(written.name);
  HEADRACE_EXPECT(entry != nullptr, UsageError, "unknown stage '" + written.name + "' (headrace knows " + known_stages() + ")");
  StageConfig config(written.name, written.configuration, stored);
  std::unique_ptr<Stage> stage = entry->make(config, shape);
  config.done();
  return stage;
}

}  // namespace

Chain Chain::assemble(std::vector<std::shared_ptr<const Stage>> stages, const std::string& where, bool stored) {
  Chain chain;
  auto refuse = [&](const std::string& why) {
    const std::string message = where + ": " + why;
    if (stored) throw CodecError(message);
    throw UsageError(message);
  };
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const auto& stage = stages[i];
    if (stage->kind() == StageKind::filter) {
      if (chain.codec_) refuse("filter " + stage->spec() + " comes after the codec " + chain.codec_->spec() + " (filters come first)");
      chain.filters_.push_back(std::static_pointer_cast<const FilterStage>(stage));
    } else {
      if (chain.codec_) refuse("two codecs (" + chain.codec_->spec() + ", " + stage->spec() + "); a chain has one, last");
      chain.codec_ = std::static_pointer_cast<const CodecStage>(stage);
    }
    if (const auto bound = stage->error_bound()) {
      if (chain.error_bound_) refuse("two lossy stages; a chain has at most one");
      chain.error_bound_ = bound;
    }
    chain.spec_ += (i == 0 ? "" : "|") + stage->spec();
  }
  if (!chain.codec_) refuse("no codec: a chain ends with one (lz4, zstd, ...), or is 'none'");
  // A lossy codec bounds the error of the values it sees: only split hands it whole values.
  if (chain.codec_->error_bound()) {
    for (const auto& filter : chain.filters_)
      if (filter->name() != "split")
        refuse("lossy stage " + chain.codec_->spec() + " quantizes values, and " + filter->spec() +
               " before it changes them; only split may come before a lossy stage");
  }
  return chain;
}

Chain Chain::parse(std::string_view text, const ElementShape& shape) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  if (text == "none" || text.empty()) return Chain{};
  auto written_stages = split_stages(text);
  // A plain codec alone keeps the one-stream form older readers know (docs/format.md 5.7) unless its
  // blocks are asked for.
  if (written_stages.size() == 1 && is_plain_codec(written_stages[0].name) &&
      written_stages[0].configuration.find("block") == std::string::npos)
    written_stages[0].configuration += std::string(written_stages[0].configuration.empty() ? "" : ",") + "block=0";
  std::vector<std::shared_ptr<const Stage>> stages;
  for (const auto& written : written_stages) stages.push_back(make_stage(written, shape, false));
  return assemble(std::move(stages), "chain '" + std::string(text) + "'", false);
}

Chain Chain::of_stored(std::string_view spec, const std::string& where) {
  std::vector<std::shared_ptr<const Stage>> stages;
  try {
    ElementShape unknown;
    unknown.known = false;
    for (const auto& written : split_stages(spec)) stages.push_back(make_stage(written, unknown, true));
  } catch (const UsageError& error) {
    throw CodecError(where + ": chain '" + std::string(spec) + "': " + error.what());
  }
  return assemble(std::move(stages), where + ": chain '" + std::string(spec) + "'", true);
}

Chain Chain::of_codec(format::CodecId codec) {
  switch (codec) {
    case format::CodecId::none: return Chain{};
    case format::CodecId::lz4:
    case format::CodecId::zstd:
    case format::CodecId::gdeflate: return parse(format::to_string(codec), ElementShape{});
    case format::CodecId::chain: break;
  }
  throw UsageError("Chain::of_codec: codec code " + std::to_string(static_cast<int>(codec)) + " is not a plain codec");
}

format::CodecId Chain::record_codec() const noexcept {
  if (!codec_) return format::CodecId::none;
  if (filters_.empty() && codec_->block_bytes() == 0) {
    for (const auto plain : {format::CodecId::lz4, format::CodecId::zstd, format::CodecId::gdeflate})
      if (codec_->name() == format::to_string(plain)) return plain;
  }
  return format::CodecId::chain;
}

bool Chain::cpu_encodes(std::string* why) const {
  for (const auto& filter : filters_)
    if (!filter->cpu_encodes(why)) return false;
  return !codec_ || codec_->cpu_encodes(why);
}

bool Chain::cpu_decodes(std::string* why) const {
  for (const auto& filter : filters_)
    if (!filter->cpu_decodes(why)) return false;
  return !codec_ || codec_->cpu_decodes(why);
}

std::vector<std::byte> Chain::filter(std::span<const std::byte> raw) const {
  std::vector<std::byte> filtered(raw.begin(), raw.end());
  for (const auto& stage : filters_) filtered = stage->encode(filtered);
  return filtered;
}

std::vector<std::byte> Chain::encode(std::span<const std::byte> raw) const {
  HEADRACE_EXPECT(codec_ != nullptr, UsageError, "chain none encodes nothing: store the raw bytes");
  if (filters_.empty()) return codec_->encode(raw);
  return codec_->encode(filter(raw));
}

void Chain::decode(std::span<const std::byte> stored, std::span<std::byte> raw, const std::string& where) const {
  HEADRACE_EXPECT(codec_ != nullptr, UsageError, where + ": chain none has nothing to decode");
  if (filters_.empty()) {
    codec_->decode(stored, raw, where);
    return;
  }
  // Buffers raw and spare in turn, starting so that the last filter undone writes raw.
  std::vector<std::byte> spare(raw.size());
  std::span<std::byte> buffers[2] = {raw, spare};
  std::size_t current = filters_.size() % 2;
  codec_->decode(stored, buffers[current], where);
  for (auto filter = filters_.rbegin(); filter != filters_.rend(); ++filter) {
    (*filter)->decode(buffers[current], buffers[1 - current], where);
    current = 1 - current;
  }
}

const Chain& chunk_chain(const std::string& coding, const std::string& where) {
  const auto plain = detail::find_value(format::codec_id_names, coding);
  static const Chain stored_as_is;
  if (plain == format::CodecId::none) return stored_as_is;  // most requests: no lock taken
  static std::mutex mutex;
  // Kept to the end: the engine holds pointers.
  static auto& chains = *new std::map<std::string, Chain>;
  std::lock_guard lock(mutex);
  if (const auto found = chains.find(coding); found != chains.end()) return found->second;
  return chains.emplace(coding, plain && *plain != format::CodecId::chain ? Chain::of_codec(*plain) : Chain::of_stored(coding, where))
      .first->second;
}

}  // namespace headrace::codec
