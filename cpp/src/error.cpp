#include "headrace/error.hpp"

#include <cstring>
#include <string>

namespace headrace::detail {
namespace {
std::string source_tag(const char* source_file, int source_line) {
  std::string_view file(source_file);
  // Keep the path from the layer folder on: "format/container.cpp:42", "headrace/error.hpp:90".
  if (auto at = file.rfind("/src/"); at != std::string_view::npos) file.remove_prefix(at + 5);
  if (auto at = file.rfind("/include/"); at != std::string_view::npos) file.remove_prefix(at + 9);
  return " [" + std::string(file) + ":" + std::to_string(source_line) + "]";
}
}  // namespace

std::string bad_data_message(std::string_view path, std::uint64_t offset, std::string_view expected,
                             std::string_view found, const char* source_file, int source_line) {
  std::string message(path);
  message += ": offset " + std::to_string(offset) + ": expected ";
  message += expected;
  if (!found.empty()) {
    message += ", found ";
    message += found;
  }
  return message + source_tag(source_file, source_line);
}

std::string system_message(std::string_view call, std::string_view path, int error_number,
                           const char* source_file, int source_line) {
  std::string message(call);
  message += "(";
  message += path;
  message += ") failed: ";
  message += std::strerror(error_number);
  return message + source_tag(source_file, source_line);
}

std::string located(std::string_view message, const char* source_file, int source_line) {
  return std::string(message) + source_tag(source_file, source_line);
}

}  // namespace headrace::detail
