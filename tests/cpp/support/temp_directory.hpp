// A fresh directory for one test, removed with everything in it. It is placed where O_DIRECT works if
// any candidate allows it (/tmp may be a tmpfs without it), so the direct and uring paths get tested
// rather than skipped.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace headrace::testing {

class TempDirectory {
 public:
  TempDirectory() : path_(make_directory()) {}
  TempDirectory(const TempDirectory&) = delete;
  TempDirectory& operator=(const TempDirectory&) = delete;
  ~TempDirectory() noexcept {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  [[nodiscard]] std::string file(const std::string& name) const { return (path_ / name).string(); }

  // Writes bytes to name inside the directory and returns its path.
  std::string write(const std::string& name, const std::vector<std::byte>& bytes) const {
    const auto target = file(name);
    std::ofstream out(target, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) throw std::runtime_error("cannot write " + target);
    return target;
  }

 private:
  static bool supports_o_direct(const std::filesystem::path& directory) {
    const auto probe = (directory / "o_direct_probe").string();
    const int fd = ::open(probe.c_str(), O_CREAT | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
    if (fd >= 0) ::close(fd);
    ::unlink(probe.c_str());
    return fd >= 0;
  }

  static std::filesystem::path make_directory() {
    const std::vector<std::filesystem::path> bases = {std::filesystem::temp_directory_path(),
                                                      std::filesystem::current_path()};
    std::vector<std::filesystem::path> made;
    for (const auto& base : bases) {
      std::string pattern = (base / "headrace-test-XXXXXX").string();
      if (::mkdtemp(pattern.data()) == nullptr) continue;
      made.emplace_back(pattern);
      if (supports_o_direct(made.back())) break;
    }
    if (made.empty()) throw std::runtime_error("cannot create a test directory in TMPDIR or the current directory");
    // Keep the last one made (the O_DIRECT one if any); remove the others.
    for (std::size_t i = 0; i + 1 < made.size(); ++i) std::filesystem::remove_all(made[i]);
    return made.back();
  }

  std::filesystem::path path_;
};

}  // namespace headrace::testing
