// GB/s of XXH3 over chunks (format/checksum.hpp): one core with each build this CPU runs, in core-cache
// and past-cache sizes; every core at once over 4 MiB chunks (what the queue's checker does); and, where
// there is a GPU, the GPU's hash of chunks in its memory (codec/gpu/chunk_hasher.hpp) over 4 MiB and
// 64 KiB chunks, its results checked against the host's: build/python/headrace_checksum_speed.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "headrace/codec/gpu/chunk_hasher.hpp"
#include "headrace/format/checksum.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/stream.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void one_core(const std::vector<std::byte>& bytes) {
  std::printf("in use: %s\n", headrace::format::xxh3_instruction_set());
  for (const auto& kernel : headrace::format::xxh3_kernels()) {
    for (const std::size_t size : {std::size_t{256} << 10, std::size_t{4} << 20, std::size_t{64} << 20}) {
      volatile std::uint64_t sink = 0;
      const std::size_t repeats = (std::size_t{2} << 30) / size;
      const auto start = Clock::now();
      for (std::size_t i = 0; i < repeats; ++i) sink = sink + kernel.hash(bytes.data(), size);
      std::printf("%-6s %6zu KiB, one core: %5.1f GB/s\n", kernel.instruction_set, size >> 10,
                  double(repeats * size) / seconds_since(start) / 1e9);
    }
  }
}

void every_core(const std::vector<std::byte>& bytes, std::size_t chunk) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t chunks = bytes.size() / chunk;
  std::atomic<std::size_t> next{0};
  const auto start = Clock::now();
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      volatile std::uint64_t sink = 0;
      for (std::size_t c; (c = next++) < chunks;) sink = sink + headrace::format::xxh3_64({bytes.data() + c * chunk, chunk});
    });
  for (auto& thread : pool) thread.join();
  std::printf("%u cores, %zu KiB chunks over %zu MiB: %5.1f GB/s\n", threads, chunk >> 10, bytes.size() >> 20,
              double(chunks * chunk) / seconds_since(start) / 1e9);
}

void gpu(const std::vector<std::byte>& bytes) {
  namespace cuda = headrace::gpu;
  if (cuda::device_count() == 0) {
    std::printf("GPU: none (%s)\n", cuda::driver() == nullptr ? cuda::why_no_driver().c_str() : "0 devices");
    return;
  }
  cuda::Device device(0);
  cuda::DeviceBuffer memory(bytes.size());
  cuda::copy_to_device(memory.pointer(), bytes.data(), bytes.size());
  headrace::codec::gpu::ChunkHasher hasher(0);
  const cuda::Stream stream;
  for (const std::size_t chunk : {std::size_t{4} << 20, std::size_t{64} << 10}) {
    std::vector<headrace::codec::gpu::ChunkHasher::Chunk> chunks;
    for (std::size_t at = 0; at + chunk <= bytes.size(); at += chunk) chunks.push_back({memory.pointer() + at, chunk});
    cuda::DeviceBuffer hashes(chunks.size() * 8);
    hasher.hash(chunks, hashes.pointer(), stream.handle());  // the scratch made, the kernels loaded
    stream.synchronize();
    const int repeats = 10;
    const cuda::Event start(true), end(true);
    start.record(stream.handle());
    for (int r = 0; r < repeats; ++r) hasher.hash(chunks, hashes.pointer(), stream.handle());
    end.record(stream.handle());
    end.synchronize();
    const double seconds = end.elapsed_ms_since(start) / 1e3 / repeats;
    std::vector<std::uint64_t> got(chunks.size());
    cuda::copy_to_host(got.data(), hashes.pointer(), got.size() * 8);
    std::size_t wrong = 0;
    for (std::size_t c = 0; c < chunks.size(); ++c)
      wrong += got[c] != headrace::format::xxh3_64({bytes.data() + c * chunk, chunk});
    std::printf("GPU, %zu KiB chunks over %zu MiB: %6.1f GB/s (%zu of %zu sums differ from the host's)\n", chunk >> 10,
                bytes.size() >> 20, double(chunks.size() * chunk) / seconds / 1e9, wrong, chunks.size());
  }
}

}  // namespace

int main() {
  std::vector<std::byte> bytes(std::size_t{1} << 30);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>((i * 2654435761u) >> 13);
  one_core(bytes);
  every_core(bytes, std::size_t{4} << 20);
  gpu(bytes);
}
