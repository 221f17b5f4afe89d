// HEADRACE_<NAME> environment variables read as typed values: one parser per type, each throwing
// UsageError that names the variable and what it expected (docs/settings.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace headrace::detail {

// The variable's value, or nullopt when it is unset or empty.
[[nodiscard]] std::optional<std::string> environment(const char* name);
[[nodiscard]] std::uint64_t parse_unsigned(const char* name, const std::string& text);
[[nodiscard]] bool parse_bool(const char* name, const std::string& text);

}  // namespace headrace::detail
