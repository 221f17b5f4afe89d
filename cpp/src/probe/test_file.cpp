#include "headrace/probe/test_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include "headrace/detail/aligned_buffer.hpp"
#include "headrace/detail/file_descriptor.hpp"
#include "headrace/error.hpp"
#include "headrace/io/detail/file_reads.hpp"
#include "splitmix.hpp"

namespace headrace::probe {
namespace {

using headrace::detail::FileDescriptor;

constexpr std::size_t kChunkBytes = std::size_t{4} << 20;

void write_all(int fd, const std::byte* data, std::size_t size_bytes, const std::string& path) {
  while (size_bytes > 0) {
    const ssize_t written = ::write(fd, data, size_bytes);
    if (written < 0) {
      if (errno == EINTR) continue;
      HEADRACE_THROW_SYSTEM("write", path);
    }
    data += written;
    size_bytes -= static_cast<std::size_t>(written);
  }
}

void fsync_directory(const std::string& directory) {
  const auto fd = FileDescriptor::open_read(directory, O_DIRECTORY);
  if (::fsync(fd.get()) != 0) HEADRACE_THROW_SYSTEM("fsync", directory);
}

// The .partial file of a write: unlinked unless the write reached its rename (STYLE habit 12).
class PartialFile {
 public:
  explicit PartialFile(std::string path) : path_(std::move(path)) {}
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;
  ~PartialFile() noexcept {
    if (!renamed_) ::unlink(path_.c_str());
  }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  void rename_to(const std::string& final_path) {
    if (::rename(path_.c_str(), final_path.c_str()) != 0) HEADRACE_THROW_SYSTEM("rename", path_ + " -> " + final_path);
    renamed_ = true;
  }

 private:
  std::string path_;
  bool renamed_ = false;
};

void write_test_file(const std::string& path, std::uint64_t size_bytes, std::uint64_t seed) {
  PartialFile partial(path + ".partial");
  FileDescriptor fd(::open(partial.path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.is_open()) {
    const int error_number = errno;
    throw FileNotFoundError(headrace::detail::system_message("open", partial.path(), error_number, __FILE__, __LINE__),
                            error_number);
  }
  headrace::detail::AlignedBuffer chunk(kChunkBytes);
  auto* words = reinterpret_cast<std::uint64_t*>(chunk.data());
  detail::SplitMix64 generator(seed);
  for (std::uint64_t done = 0; done < size_bytes;) {
    const auto length = static_cast<std::size_t>(std::min<std::uint64_t>(kChunkBytes, size_bytes - done));
    for (std::size_t i = 0; i < (length + 7) / 8; ++i) words[i] = generator.next();
    write_all(fd.get(), chunk.data(), length, partial.path());
    done += length;
  }
  if (::fsync(fd.get()) != 0) HEADRACE_THROW_SYSTEM("fsync", partial.path());
  // Clean after fsync: drop the pages so that a first buffered read is not already hot.
  (void)::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
  fd.close();
  partial.rename_to(path);
  const auto directory = std::filesystem::path(path).parent_path();
  fsync_directory(directory.empty() ? std::string(".") : directory.string());
}

}  // namespace

TestFile prepare_test_file(const std::string& path, std::uint64_t size_bytes, std::uint64_t seed) {
  HEADRACE_EXPECT(!path.empty(), UsageError, "probe: path is empty");
  struct stat info {};
  std::string file = path;
  if (::stat(path.c_str(), &info) == 0) {
    if (S_ISREG(info.st_mode) || S_ISBLK(info.st_mode)) {
      return {path, io::detail::open_for_reading(path, false).size_bytes, false};
    }
    HEADRACE_EXPECT(S_ISDIR(info.st_mode), UsageError,
                    "probe: " + path + " is not a regular file, a block device or a directory");
    file = (std::filesystem::path(path) / kTestFileName).string();
    if (::stat(file.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        static_cast<std::uint64_t>(info.st_size) == size_bytes) {
      return {file, size_bytes, false};
    }
  } else if (errno != ENOENT) {
    HEADRACE_THROW_SYSTEM("stat", path);
  }
  HEADRACE_EXPECT(size_bytes > 0, UsageError, "probe: test file size must be > 0 bytes");
  write_test_file(file, size_bytes, seed);
  return {file, size_bytes, true};
}

void warm_page_cache(const std::string& path) {
  const auto fd = FileDescriptor::open_read(path, 0);
  std::vector<std::byte> chunk(kChunkBytes);
  for (;;) {
    const ssize_t got = ::read(fd.get(), chunk.data(), chunk.size());
    if (got == 0) return;
    if (got < 0 && errno != EINTR) HEADRACE_THROW_SYSTEM("read", path);
  }
}

}  // namespace headrace::probe
