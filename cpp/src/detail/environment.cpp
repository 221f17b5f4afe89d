#include "headrace/detail/environment.hpp"

#include <cstdlib>

#include "headrace/error.hpp"

namespace headrace::detail {

std::optional<std::string> environment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::uint64_t parse_unsigned(const char* name, const std::string& text) {
  std::size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &used, 0);
  } catch (const std::exception&) {
    used = 0;
  }
  HEADRACE_EXPECT(used == text.size() && !text.empty() && text[0] != '-', UsageError,
                  std::string(name) + "=" + text + ": expected a non-negative integer");
  return value;
}

bool parse_bool(const char* name, const std::string& text) {
  if (text == "1" || text == "on" || text == "true" || text == "yes") return true;
  if (text == "0" || text == "off" || text == "false" || text == "no") return false;
  throw UsageError(std::string(name) + "=" + text + ": expected on|off|1|0|true|false");
}

}  // namespace headrace::detail
