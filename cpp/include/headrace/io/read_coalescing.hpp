// Joins reads that continue one another, in the file and in memory, into fewer, larger reads: small
// compressed chunks stored one after another become one request of the size the device likes
// (seed 001: blocks of 32 KiB and more; the probe finds 1 to 4 MiB best on our disks).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "headrace/io/backend.hpp"

namespace headrace::io {

struct CoalescedReads {
  std::vector<ReadRequest> reads;
  // Per request given: the index of the read that carries it, and where its bytes start in that read.
  std::vector<std::pair<std::size_t, std::uint64_t>> carried_by;
};

struct CoalescingLimits {
  std::uint64_t file_size = 0;        // a joined read never passes it (a member past it stays alone)
  std::uint64_t max_gap_bytes = 4096;  // bytes between two requests read into the gap between them
  std::uint64_t max_read_bytes = std::uint64_t{16} << 20;
};

// Request i joins the read before it when both are joinable, it starts at most max_gap_bytes after
// that read ends, at the same distance in memory as in the file, and the joined read stays within
// the limits. Joinable means the memory gap in front of it may be written (staging padding, never
// a caller's buffer). Order is kept: only neighbours in the given order are joined.
[[nodiscard]] CoalescedReads coalesce_reads(const std::vector<ReadRequest>& requests, const std::vector<bool>& joinable,
                                            const CoalescingLimits& limits);

}  // namespace headrace::io
