// GB/s of one core hashing a chunk with each XXH3 build this CPU runs (format/checksum.hpp), in
// core-cache and past-cache sizes: build/python/headrace_checksum_speed.
#include <chrono>
#include <cstdio>
#include <vector>

#include "headrace/format/checksum.hpp"

int main() {
  std::vector<std::byte> bytes(std::size_t{64} << 20, std::byte{3});
  std::printf("in use: %s\n", headrace::format::xxh3_instruction_set());
  for (const auto& kernel : headrace::format::xxh3_kernels()) {
    for (const std::size_t size : {std::size_t{256} << 10, std::size_t{4} << 20, bytes.size()}) {
      volatile std::uint64_t sink = 0;
      const std::size_t repeats = (std::size_t{2} << 30) / size;
      const auto start = std::chrono::steady_clock::now();
      for (std::size_t i = 0; i < repeats; ++i) sink = sink + kernel.hash(bytes.data(), size);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf("%-6s %6zu KiB: %5.1f GB/s\n", kernel.instruction_set, size >> 10, double(repeats * size) / seconds / 1e9);
    }
  }
}
