// One constexpr table of names per enum: its to_string, its parsing (whose error names the valid
// choices) and the bindings' choices all read the table, so each name is written once.
//
//   inline constexpr detail::EnumNames<PinPolicy, 3> pin_policy_names{{{PinPolicy::auto_, "auto"}, ...}};
//
// The first entry of a value is its name; later entries of the same value are aliases that parsing
// accepts ("true" for on) and the listed choices leave out.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "headrace/error.hpp"

namespace headrace::detail {

template <typename E, std::size_t N>
using EnumNames = std::array<std::pair<E, std::string_view>, N>;

// The name of value (a string literal, so its data() ends in '\0'), or "?" for a value the table lacks.
template <typename E, std::size_t N>
[[nodiscard]] constexpr const char* name_of(const EnumNames<E, N>& names, E value) noexcept {
  for (const auto& [entry, name] : names)
    if (entry == value) return name.data();
  return "?";
}

// The value named text (a name or an alias), or nullopt.
template <typename E, std::size_t N>
[[nodiscard]] constexpr std::optional<E> find_value(const EnumNames<E, N>& names, std::string_view text) noexcept {
  for (const auto& [entry, name] : names)
    if (name == text) return entry;
  return std::nullopt;
}

// The values' names in table order, aliases left out.
template <typename E, std::size_t N>
[[nodiscard]] std::vector<std::string> names_of(const EnumNames<E, N>& names) {
  std::vector<std::string> listed;
  for (std::size_t i = 0; i < N; ++i) {
    bool alias = false;
    for (std::size_t j = 0; j < i; ++j) alias = alias || names[j].first == names[i].first;
    if (!alias) listed.emplace_back(names[i].second);
  }
  return listed;
}

// The names joined by '|': "auto|on|off".
template <typename E, std::size_t N>
[[nodiscard]] std::string choices_of(const EnumNames<E, N>& names) {
  std::string joined;
  for (const auto& name : names_of(names)) joined += (joined.empty() ? "" : "|") + name;
  return joined;
}

// The value named text; throws UsageError "<what> '<text>': expected a|b|c".
template <typename E, std::size_t N>
[[nodiscard]] E parse_name(const EnumNames<E, N>& names, std::string_view text, std::string_view what) {
  if (const auto value = find_value(names, text)) return *value;
  throw UsageError(std::string(what) + " '" + std::string(text) + "': expected " + choices_of(names));
}

}  // namespace headrace::detail
