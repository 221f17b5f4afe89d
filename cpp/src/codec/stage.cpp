#include "headrace/codec/stage.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "headrace/error.hpp"

namespace headrace::codec {

namespace {

bool is_name_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }

std::string trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(' ');
  if (first == std::string_view::npos) return "";
  return std::string(text.substr(first, text.find_last_not_of(' ') - first + 1));
}

}  // namespace

StageConfig::StageConfig(std::string stage, std::string_view text, bool every_value_written)
    : stage_(std::move(stage)), every_value_written_(every_value_written) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string pair = trimmed(text.substr(at, comma - at));
    const std::size_t equals = pair.find('=');
    HEADRACE_EXPECT(equals != std::string::npos && equals > 0 && equals + 1 < pair.size(), UsageError,
                    "stage " + stage_ + ": expected key=value, found '" + pair + "'");
    const std::string key = trimmed(pair.substr(0, equals));
    HEADRACE_EXPECT(std::all_of(key.begin(), key.end(), is_name_char), UsageError,
                    "stage " + stage_ + ": '" + key + "' is not a key (lower-case letters, digits, '_')");
    HEADRACE_EXPECT(values_.emplace(key, trimmed(pair.substr(equals + 1))).second, UsageError,
                    "stage " + stage_ + ": key '" + key + "' given twice");
    at = comma + 1;
  }
}

std::optional<std::string> StageConfig::take(const std::string& key) {
  read_.push_back(key);
  const auto found = values_.find(key);
  if (found != values_.end()) return found->second;
  HEADRACE_EXPECT(!every_value_written_, UsageError, "stage " + stage_ + ": its stored configuration lacks '" + key + "'");
  return std::nullopt;
}

std::int64_t StageConfig::integer(const std::string& key, std::optional<std::int64_t> fallback, std::int64_t low,
                                  std::int64_t high) {
  const auto text = take(key);
  const std::string range = " (expected an integer in " + std::to_string(low) + ".." + std::to_string(high) + ")";
  if (!text) {
    HEADRACE_EXPECT(fallback.has_value(), UsageError, "stage " + stage_ + ": '" + key + "' is required" + range);
    return *fallback;
  }
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  HEADRACE_EXPECT(error == std::errc() && end == text->data() + text->size() && value >= low && value <= high, UsageError,
                  "stage " + stage_ + ": " + key + "=" + *text + " is out of range" + range);
  return value;
}

double StageConfig::positive(const std::string& key, std::optional<double> fallback, double high) {
  const auto text = take(key);
  char most[32];
  std::snprintf(most, sizeof most, "%g", high);
  const std::string range = std::string(" (expected a number in (0, ") + most + "])";
  if (!text) {
    HEADRACE_EXPECT(fallback.has_value(), UsageError, "stage " + stage_ + ": '" + key + "' is required" + range);
    return *fallback;
  }
  char* end = nullptr;
  const double value = std::strtod(text->c_str(), &end);
  HEADRACE_EXPECT(end == text->c_str() + text->size() && !text->empty() && std::isfinite(value) && value > 0 && value <= high,
                  UsageError, "stage " + stage_ + ": " + key + "=" + *text + " is out of range" + range);
  return value;
}

std::string StageConfig::choice(const std::string& key, std::optional<std::string> fallback,
                                const std::vector<std::string>& names) {
  const auto text = take(key);
  std::string listed;
  for (const auto& name : names) listed += (listed.empty() ? "" : ", ") + name;
  if (!text) {
    HEADRACE_EXPECT(fallback.has_value(), UsageError, "stage " + stage_ + ": '" + key + "' is required (one of " + listed + ")");
    return *fallback;
  }
  HEADRACE_EXPECT(std::find(names.begin(), names.end(), *text) != names.end(), UsageError,
                  "stage " + stage_ + ": " + key + "=" + *text + " is not one of " + listed);
  return *text;
}

void StageConfig::done() const {
  for (const auto& [key, value] : values_)
    HEADRACE_EXPECT(std::find(read_.begin(), read_.end(), key) != read_.end(), UsageError,
                    "stage " + stage_ + " has no key '" + key + "' (docs/codecs/" + stage_ + ".md lists its keys)");
}

std::string Stage::spec() const {
  const std::string configured = configuration();
  return configured.empty() ? std::string(name()) : std::string(name()) + "(" + configured + ")";
}

bool Stage::cpu_encodes(std::string* why) const {
  if (why != nullptr) why->clear();
  return true;
}

bool Stage::cpu_decodes(std::string* why) const {
  if (why != nullptr) why->clear();
  return true;
}

std::string stage_context(const std::string& where, const Stage& stage) { return where + ": stage " + stage.spec(); }

namespace {

constexpr std::uint64_t block_alignment = 16;  // nvCOMP's largest input alignment (ANS)

std::uint64_t aligned16(std::uint64_t bytes) { return (bytes + block_alignment - 1) / block_alignment * block_alignment; }

}  // namespace

std::uint64_t CodecStage::max_raw_chunk_bytes() const noexcept {
  return block_ == 0 ? max_block_bytes() : std::uint64_t{1} << 31;
}

std::string CodecStage::with_block(const std::string& keys) const {
  return (keys.empty() ? "" : keys + ",") + "block=" + std::to_string(block_);
}

std::vector<std::span<const std::byte>> CodecStage::raw_blocks(std::span<const std::byte> raw) const {
  if (block_ == 0) return {raw};
  std::vector<std::span<const std::byte>> result;
  for (std::uint64_t at = 0; at < raw.size(); at += block_) result.push_back(raw.subspan(at, std::min(block_, raw.size() - at)));
  return result;
}

std::vector<std::byte> CodecStage::encode(std::span<const std::byte> raw) const {
  std::string why;
  HEADRACE_EXPECT(cpu_encodes(&why), UnavailableError, why);
  std::vector<std::vector<std::byte>> encoded;
  for (const auto block : raw_blocks(raw)) encoded.push_back(encode_block(block));
  return join_blocks(std::move(encoded));
}

std::vector<std::byte> CodecStage::join_blocks(std::vector<std::vector<std::byte>> encoded) const {
  if (block_ == 0) {
    HEADRACE_EXPECT(encoded.size() == 1, UsageError, spec() + ": one stream for a chunk without blocks");
    return std::move(encoded.front());
  }
  const std::uint64_t count = encoded.size();
  HEADRACE_EXPECT(count <= std::numeric_limits<std::uint32_t>::max(), UsageError, spec() + ": too many blocks in a chunk");
  std::uint64_t size = aligned16(8 + 4 * count);
  for (const auto& block : encoded) size = aligned16(size) + block.size();
  std::vector<std::byte> stored(size);
  const auto put32 = [&](std::uint64_t at, std::uint64_t value) {
    const auto v = static_cast<std::uint32_t>(value);
    std::memcpy(stored.data() + at, &v, 4);
  };
  put32(0, count);
  std::uint64_t at = aligned16(8 + 4 * count);
  for (std::uint64_t i = 0; i < count; ++i) {
    HEADRACE_EXPECT(encoded[i].size() <= std::numeric_limits<std::uint32_t>::max(), UsageError, spec() + ": a block over 4 GiB");
    put32(8 + 4 * i, encoded[i].size());
    at = aligned16(at);
    std::memcpy(stored.data() + at, encoded[i].data(), encoded[i].size());
    at += encoded[i].size();
  }
  return stored;
}

std::vector<CodecStage::Block> CodecStage::blocks(std::span<const std::byte> stored, std::uint64_t raw_size,
                                                  const std::string& where) const {
  if (block_ == 0) return {{0, stored.size(), 0, raw_size}};
  const std::uint64_t count = (raw_size + block_ - 1) / block_;
  const auto refuse = [&](const std::string& found) {
    throw CodecError(stage_context(where, *this) + ": expected a table of " + std::to_string(count) + " blocks of " +
                     std::to_string(block_) + " raw bytes for " + std::to_string(raw_size) + " raw bytes in " +
                     std::to_string(stored.size()) + " stored bytes, found " + found);
  };
  std::uint32_t stored_count = 0;
  if (stored.size() < 8) refuse("a table cut short");
  std::memcpy(&stored_count, stored.data(), 4);
  if (stored_count != count) refuse(std::to_string(stored_count) + " blocks");
  std::uint64_t at = aligned16(8 + 4 * count);
  if (at > stored.size()) refuse("a table cut short");
  std::vector<Block> result;
  result.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint32_t size = 0;
    std::memcpy(&size, stored.data() + 8 + 4 * i, 4);
    at = aligned16(at);
    if (size == 0) refuse("block " + std::to_string(i) + " empty");
    if (at + size > stored.size()) refuse("block " + std::to_string(i) + " of " + std::to_string(size) + " bytes past the end");
    result.push_back({at, size, i * block_, std::min(block_, raw_size - i * block_)});
    at += size;
  }
  return result;
}

void CodecStage::decode(std::span<const std::byte> in, std::span<std::byte> out, const std::string& where) const {
  std::string why;
  HEADRACE_EXPECT(cpu_decodes(&why), UnavailableError, where + ": " + why);
  if (block_ == 0) {
    decode_block(in, out, where);
    return;
  }
  const auto table = blocks(in, out.size(), where);
  for (std::size_t i = 0; i < table.size(); ++i)
    decode_block(in.subspan(table[i].stored_offset, table[i].stored_size), out.subspan(table[i].raw_offset, table[i].raw_size),
                 where + ": block " + std::to_string(i));
}

std::uint64_t read_block(StageConfig& config, std::uint64_t fallback, std::uint64_t most) {
  const auto block = static_cast<std::uint64_t>(config.integer("block", static_cast<std::int64_t>(std::min(fallback, most)), 0,
                                                               static_cast<std::int64_t>(most)));
  HEADRACE_EXPECT(block % 4096 == 0, UsageError,
                  "stage " + config.stage() + ": block=" + std::to_string(block) + " is not a multiple of 4096 (0: no blocks)");
  return block;
}

}  // namespace headrace::codec
