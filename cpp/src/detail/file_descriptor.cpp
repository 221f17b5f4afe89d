#include "headrace/detail/file_descriptor.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "headrace/error.hpp"

namespace headrace::detail {

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

FileDescriptor FileDescriptor::open_read(const std::string& path, int extra_flags) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | extra_flags);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) HEADRACE_THROW_SYSTEM("open", path);
  return FileDescriptor(fd);
}

void FileDescriptor::close() noexcept {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
}

}  // namespace headrace::detail
