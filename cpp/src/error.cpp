#include "headrace/error.hpp"

#include <cstring>
#include <new>
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

namespace headrace {
namespace {

template <class Thrown>
Thrown with_message(const Thrown& error, const std::string& message) {
  if constexpr (requires { error.error_number(); }) return Thrown(message, error.error_number());
  else if constexpr (requires { error.result(); }) return Thrown(message, error.result());
  else return Thrown(message);
}

// Tries each type in order: most derived first, as a catch clause takes the first base that matches.
template <class First, class... Rest>
[[noreturn]] void rethrow_as_first_match(const std::exception_ptr& thrown, const std::string& lead) {
  try {
    std::rethrow_exception(thrown);
  } catch (const First& error) {
    throw with_message(error, lead + error.what());
  } catch (...) {
    if constexpr (sizeof...(Rest) != 0) rethrow_as_first_match<Rest...>(thrown, lead);
    else throw;
  }
}

}  // namespace

void rethrow_with_context(const std::exception_ptr& thrown, std::string_view context) {
  const std::string lead(context);
  try {
    rethrow_as_first_match<UnknownNameError, UsageError, FileNotFoundError, SystemError, UnavailableError,
                           GpuOutOfMemoryError, CudaError, TruncatedFileError, BadMagicError, UnsupportedVersionError,
                           CorruptIndexError, ChunkOutOfBoundsError, ChecksumMismatchError, EmptyFieldError, CodecError,
                           BadDataError, Error>(thrown, lead);
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;  // no room to build a longer message
  } catch (const std::exception& error) {
    throw Error(lead + error.what());
  }
}

std::string message_of(const std::exception_ptr& thrown) {
  try {
    std::rethrow_exception(thrown);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an error of a type that is not an exception";
  }
}

}  // namespace headrace
