// A file of pseudo-random bytes in a temporary directory, with its bytes to compare against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "support/random_bytes.hpp"
#include "support/temp_directory.hpp"

namespace headrace::testing {

struct RawFile {
  explicit RawFile(std::size_t size = 1 << 20, std::uint64_t seed = 11)
      : bytes(pseudo_random_bytes(size, seed)), path(dir.write("raw.bin", bytes)) {}
  TempDirectory dir;
  std::vector<std::byte> bytes;
  std::string path;
};

}  // namespace headrace::testing
