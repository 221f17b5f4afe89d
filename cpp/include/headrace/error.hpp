// Error types of headrace. Each C++ type maps to one Python exception (python/bindings/module.cpp).
// Bad data names the file, the offset and what was expected; failed calls name the call and errno.
#pragma once

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

namespace headrace {

// Base of every headrace error.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A caller passed an argument that cannot work (bad option value, wrong buffer size).
class UsageError : public Error {
 public:
  using Error::Error;
};

// A name looked up that is not there (a field of a container): Python's KeyError too.
class UnknownNameError : public UsageError {
 public:
  using UsageError::UsageError;
};

// A system call failed; the message names the call, the path and strerror(errno).
class SystemError : public Error {
 public:
  SystemError(const std::string& message, int error_number) : Error(message), error_number_(error_number) {}
  [[nodiscard]] int error_number() const noexcept { return error_number_; }

 private:
  int error_number_;
};

// The path does not exist or cannot be opened for reading.
class FileNotFoundError : public SystemError {
 public:
  using SystemError::SystemError;
};

// Something needed here is missing: a backend, a library, O_DIRECT on this file system.
class UnavailableError : public Error {
 public:
  using Error::Error;
};

// A CUDA driver call failed; the message names the call and the driver's error name.
class CudaError : public Error {
 public:
  CudaError(const std::string& message, int result) : Error(message), result_(result) {}
  [[nodiscard]] int result() const noexcept { return result_; }

 private:
  int result_;
};

// GPU memory could not be had; the message says how much was asked for.
class GpuOutOfMemoryError : public CudaError {
 public:
  using CudaError::CudaError;
};

// Bad or corrupt data: the message names the file, the offset and what was expected.
class BadDataError : public Error {
 public:
  using Error::Error;
};

#define HEADRACE_BAD_DATA_KIND(Name)       \
  class Name : public BadDataError {       \
   public:                                 \
    using BadDataError::BadDataError;      \
  }
HEADRACE_BAD_DATA_KIND(TruncatedFileError);      // the file is shorter than its superblock says
HEADRACE_BAD_DATA_KIND(BadMagicError);           // not a headrace container (or not the format named)
HEADRACE_BAD_DATA_KIND(UnsupportedVersionError); // a format version this build cannot read
HEADRACE_BAD_DATA_KIND(CorruptIndexError);       // the index fails its checksum or its own rules
HEADRACE_BAD_DATA_KIND(ChunkOutOfBoundsError);   // a chunk points outside the data region
HEADRACE_BAD_DATA_KIND(ChecksumMismatchError);   // stored bytes differ from their recorded checksum
HEADRACE_BAD_DATA_KIND(EmptyFieldError);         // a field with no elements or no components
HEADRACE_BAD_DATA_KIND(CodecError);              // compressed bytes that do not decode to their raw size
#undef HEADRACE_BAD_DATA_KIND

// Throws the error `thrown` holds again, as its own type (errno or CUDA result kept), its message led
// by `context` ("frame 2 (particles): "): whoever reports a failure found elsewhere (a request's, read
// on another thread) adds where it was without turning a checksum mismatch into a plain Error.
[[noreturn]] void rethrow_with_context(const std::exception_ptr& thrown, std::string_view context);

// The message of the error `thrown` holds.
std::string message_of(const std::exception_ptr& thrown);

namespace detail {

// "path: offset N: expected X, found Y [file.cpp:123]"; built only when the check fails.
std::string bad_data_message(std::string_view path, std::uint64_t offset, std::string_view expected,
                             std::string_view found, const char* source_file, int source_line);
std::string system_message(std::string_view call, std::string_view path, int error_number,
                           const char* source_file, int source_line);
std::string located(std::string_view message, const char* source_file, int source_line);

}  // namespace detail
}  // namespace headrace

// Throws ErrorType naming path, offset, expected and found when cond is false.
#define HEADRACE_EXPECT_DATA(cond, ErrorType, path, offset, expected, found)                         \
  do {                                                                                              \
    if (!(cond))                                                                                    \
      throw ErrorType(::headrace::detail::bad_data_message((path), (offset), (expected), (found),   \
                                                           __FILE__, __LINE__));                    \
  } while (0)

// Throws ErrorType with message when cond is false.
#define HEADRACE_EXPECT(cond, ErrorType, message)                                          \
  do {                                                                                     \
    if (!(cond)) throw ErrorType(::headrace::detail::located((message), __FILE__, __LINE__)); \
  } while (0)

// Throws SystemError (errno captured now) naming the call and the path.
#define HEADRACE_THROW_SYSTEM(call, path)                                                         \
  do {                                                                                           \
    const int headrace_errno_ = errno;                                                           \
    throw ::headrace::SystemError(                                                               \
        ::headrace::detail::system_message((call), (path), headrace_errno_, __FILE__, __LINE__), \
        headrace_errno_);                                                                        \
  } while (0)
