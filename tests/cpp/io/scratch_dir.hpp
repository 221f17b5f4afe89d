// A temporary directory for I/O tests, removed with everything in it when the object goes away.
// It is placed where O_DIRECT works if any candidate allows it (/tmp may be a tmpfs without it),
// so the direct and uring backends get tested rather than skipped.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace headrace::testing {

class ScratchDir {
 public:
  ScratchDir() : path_(make_dir()) {}
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }

  // Writes bytes to name inside the directory and returns its path.
  std::string write(const std::string& name, const std::vector<std::byte>& bytes) const {
    const auto file = path_ / name;
    std::ofstream out(file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) throw std::runtime_error("cannot write " + file.string());
    return file.string();
  }

 private:
  static bool supports_o_direct(const std::filesystem::path& dir) {
    const auto probe = (dir / "o_direct_probe").string();
    const int fd = ::open(probe.c_str(), O_CREAT | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
    if (fd >= 0) ::close(fd);
    ::unlink(probe.c_str());
    return fd >= 0;
  }

  static std::filesystem::path make_dir() {
    const std::vector<std::filesystem::path> bases = {std::filesystem::temp_directory_path(),
                                                      std::filesystem::current_path()};
    std::vector<std::filesystem::path> made;
    for (const auto& base : bases) {
      std::string pattern = (base / "headrace-io-XXXXXX").string();
      if (::mkdtemp(pattern.data()) == nullptr) continue;
      made.emplace_back(pattern);
      if (supports_o_direct(made.back())) break;
    }
    if (made.empty()) throw std::runtime_error("cannot create a scratch directory in /tmp or the current directory");
    // Keep the last one made (the O_DIRECT one if any); remove the others.
    for (std::size_t i = 0; i + 1 < made.size(); ++i) std::filesystem::remove_all(made[i]);
    return made.back();
  }

  std::filesystem::path path_;
};

// Deterministic pseudo-random bytes (splitmix64), the same on every machine.
inline std::vector<std::byte> pseudo_random_bytes(std::size_t size_bytes, std::uint64_t seed) {
  std::vector<std::byte> bytes(size_bytes);
  std::uint64_t state = seed;
  for (std::size_t i = 0; i < size_bytes; i += 8) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    for (std::size_t b = 0; b < 8 && i + b < size_bytes; ++b) bytes[i + b] = static_cast<std::byte>(z >> (8 * b));
  }
  return bytes;
}

}  // namespace headrace::testing
