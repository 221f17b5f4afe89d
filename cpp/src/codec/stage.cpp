#include "headrace/codec/stage.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "headrace/error.hpp"

namespace headrace::codec {

const char* to_string(StageKind kind) noexcept { return kind == StageKind::filter ? "filter" : "codec"; }

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
  const std::string range = " (expected a number in (0, " + std::to_string(high) + "])";
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

}  // namespace headrace::codec
