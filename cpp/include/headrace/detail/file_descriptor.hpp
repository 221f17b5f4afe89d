// Owning POSIX file descriptor: move-only, closed exactly once.
#pragma once

#include <string>

namespace headrace::detail {

class FileDescriptor {
 public:
  FileDescriptor() noexcept = default;
  explicit FileDescriptor(int fd) noexcept : fd_(fd) {}
  ~FileDescriptor() noexcept { close(); }

  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;

  // Opens path read-only with extra open(2) flags; throws SystemError naming open() and path.
  [[nodiscard]] static FileDescriptor open_read(const std::string& path, int extra_flags);

  [[nodiscard]] int get() const noexcept { return fd_; }
  [[nodiscard]] bool is_open() const noexcept { return fd_ >= 0; }
  // Idempotent; close(2) errors are ignored because a read-only descriptor has nothing to flush.
  void close() noexcept;

 private:
  int fd_ = -1;
};

}  // namespace headrace::detail
