// Reads container chunks through an io backend, verifies their checksums and decodes them on the CPU.
// The host path of headrace; the GPU streaming engine builds on the same requests.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "headrace/format/container.hpp"
#include "headrace/io/backend.hpp"

namespace headrace::codec {

struct ChunkScanOptions {
  // Bytes of reads in flight per window; the next window is read while the last one is verified.
  // Seed 001 recommends >= 256 MiB of staging.
  std::uint64_t window_bytes = std::uint64_t{256} << 20;
  bool verify = true;
  // Called after each window with the stored bytes done so far (progress bars).
  std::function<void(std::uint64_t)> progress;
};

struct ChunkScanReport {
  std::uint64_t chunks = 0;
  std::uint64_t stored_bytes = 0;
  std::uint64_t raw_bytes = 0;
};

// Reads every chunk in chunks (stored bytes, no decoding) through backend; throws the first failure
// (SystemError for I/O, ChecksumMismatchError naming the chunk).
ChunkScanReport scan_chunks(const format::Container& container, io::Backend& backend,
                            std::span<const format::ChunkInfo> chunks, const ChunkScanOptions& options = {});

// Reads field `field` of frame `frame` into destination (exactly its raw bytes), verifying each
// chunk; uncompressed chunks land straight in destination, compressed ones are decoded in parallel.
void read_field(const format::Container& container, io::Backend& backend, std::uint32_t frame, std::uint32_t field,
                std::span<std::byte> destination, bool verify = true);

[[nodiscard]] std::uint64_t field_raw_bytes(const format::Container& container, std::uint32_t frame, std::uint32_t field);

}  // namespace headrace::codec
