#include "headrace/io/detail/file_reads.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "headrace/detail/aligned_buffer.hpp"
#include "headrace/error.hpp"

namespace headrace::io::detail {
namespace {

// Linux moves at most 0x7ffff000 bytes per read; asking for 1 GiB keeps each call whole and aligned.
constexpr std::uint64_t max_pread_bytes = std::uint64_t{1} << 30;

std::string o_direct_refused(const std::string& path) {
  return "O_DIRECT is not supported by the file system of " + path +
         " (open with O_DIRECT gave EINVAL; tmpfs before Linux 6.6 is one such)";
}

}  // namespace

OpenedFile open_for_reading(const std::string& path, bool o_direct) {
  OpenedFile file;
  try {
    file.fd = headrace::detail::FileDescriptor::open_read(path, o_direct ? O_DIRECT : 0);
  } catch (const SystemError& error) {
    if (o_direct && error.error_number() == EINVAL) throw UnavailableError(o_direct_refused(path));
    throw FileNotFoundError(error.what(), error.error_number());
  }
  struct stat info {};
  if (::fstat(file.fd.get(), &info) != 0) HEADRACE_THROW_SYSTEM("fstat", path);
  if (S_ISDIR(info.st_mode)) {
    throw FileNotFoundError(headrace::detail::system_message("open", path, EISDIR, __FILE__, __LINE__), EISDIR);
  }
  if (S_ISBLK(info.st_mode)) {
    // A block device's st_size is 0; the probe reads raw devices.
    if (::ioctl(file.fd.get(), BLKGETSIZE64, &file.size_bytes) != 0) HEADRACE_THROW_SYSTEM("ioctl(BLKGETSIZE64)", path);
  } else {
    file.size_bytes = static_cast<std::uint64_t>(info.st_size);
  }
  return file;
}

std::optional<std::string> o_direct_unavailable_reason(const std::string& path) {
  try {
    (void)headrace::detail::FileDescriptor::open_read(path, O_DIRECT);
  } catch (const SystemError& error) {
    if (error.error_number() == EINVAL) return o_direct_refused(path);
  }
  return std::nullopt;
}

PreadOutcome pread_until(int fd, std::byte* destination, std::uint64_t size_bytes, std::uint64_t file_offset,
                         std::uint64_t wanted_bytes, bool o_direct) noexcept {
  PreadOutcome outcome;
  while (outcome.bytes_read < wanted_bytes) {
    const std::uint64_t ask = std::min(size_bytes - outcome.bytes_read, max_pread_bytes);
    const ssize_t got = ::pread(fd, destination + outcome.bytes_read, ask,
                                static_cast<off_t>(file_offset + outcome.bytes_read));
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      outcome.error_number = errno;
      return outcome;
    }
    if (got == 0) return outcome;
    outcome.bytes_read += static_cast<std::uint64_t>(got);
    if (o_direct && outcome.bytes_read % headrace::detail::io_alignment_bytes != 0) return outcome;
  }
  return outcome;
}

}  // namespace headrace::io::detail
