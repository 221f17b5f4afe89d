// Opening a file for a backend and the pread(2) loops behind the thread-pool backends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "headrace/detail/file_descriptor.hpp"

namespace headrace::io::detail {

struct OpenedFile {
  headrace::detail::FileDescriptor fd;
  std::uint64_t size_bytes = 0;
};

// Opens a regular file or block device read-only, with O_DIRECT when asked. Throws
// FileNotFoundError when path cannot be opened (or is a directory) and UnavailableError with
// o_direct_unavailable_reason() when the file system refuses O_DIRECT.
[[nodiscard]] OpenedFile open_for_reading(const std::string& path, bool o_direct);

// Why O_DIRECT cannot be used on path's file system (open gives EINVAL, e.g. tmpfs before Linux
// 6.6), or nullopt when it can or when path cannot be opened at all (open_backend reports that).
[[nodiscard]] std::optional<std::string> o_direct_unavailable_reason(const std::string& path);

struct PreadOutcome {
  std::uint64_t bytes_read = 0;
  int error_number = 0;  // 0 when bytes_read < wanted_bytes because the file ended
};

// Reads file bytes [file_offset, file_offset + size_bytes) into destination until wanted_bytes
// (<= size_bytes) are in, looping over short reads and retrying EINTR/EAGAIN. With o_direct, a
// short read that stops off a 4096 boundary is the end of the file (the next pread would be
// unaligned), so O_DIRECT callers ask for the aligned cover and want only the bytes they need.
[[nodiscard]] PreadOutcome pread_until(int fd, std::byte* destination, std::uint64_t size_bytes, std::uint64_t file_offset,
                                       std::uint64_t wanted_bytes, bool o_direct) noexcept;

}  // namespace headrace::io::detail
