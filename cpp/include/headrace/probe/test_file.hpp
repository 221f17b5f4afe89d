// The file the probe reads: a user's file as it is, or one it writes with incompressible data.
#pragma once

#include <cstdint>
#include <string>

namespace headrace::probe {

// Name of the file created inside a directory given to the probe.
inline constexpr const char* kTestFileName = "headrace-probe.bin";

struct TestFile {
  std::string path;             // the file that is read
  std::uint64_t size_bytes = 0;
  bool created = false;         // written by this call (false: an existing file was reused)
};

// path a regular file or a block device: returned as it is. path a directory: <path>/headrace-probe.bin, reused when it
// has size_bytes, else (re)written. path missing: written with size_bytes. Written files hold seeded
// pseudo-random bytes, go through <file>.partial, fsync and rename, and are dropped from the page cache.
// Throws FileNotFoundError when the parent directory cannot be written, UsageError for size_bytes 0.
[[nodiscard]] TestFile prepare_test_file(const std::string& path, std::uint64_t size_bytes, std::uint64_t seed);

// Reads the whole file once so that buffered (hot) reads find it in the page cache.
void warm_page_cache(const std::string& path);

}  // namespace headrace::probe
