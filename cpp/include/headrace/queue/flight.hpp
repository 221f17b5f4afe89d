// One dispatch of the queue: the requests it sent to backends at once and the reads that carry them.
// Adjacent staged chunks travel as one read, so a request's outcome is its share of its read's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "headrace/io/backend.hpp"
#include "headrace/queue/request.hpp"

namespace headrace::queue {

struct Flight {
  std::uint64_t number = 0;  // the queue's count of flights before it (its timeline record)
  // The requests read by backends, in the order of the reads that carry them (batch by batch), then
  // `pinned` requests that read nothing (their bytes are DMA'd from page-locked files).
  std::vector<RequestId> ids;
  std::vector<std::shared_ptr<io::ReadBatch>> batches;
  // Per id read by a backend: which read of the flight (over all batches, in order) carried it, and
  // where its bytes start in that read.
  std::vector<std::pair<std::size_t, std::uint64_t>> carried_by;
  std::size_t pinned = 0;
};

// Waits for every batch of the flight (no read into a destination or staging outlives this), then
// gives each request read by a backend its status: its read's error, or the bytes of its own range
// that arrived (stored_sizes: per such request, in flight order).
[[nodiscard]] inline std::vector<io::ReadStatus> carried_statuses(const Flight& flight,
                                                                  std::span<const std::uint64_t> stored_sizes) {
  std::vector<io::ReadStatus> carried;
  for (const auto& batch : flight.batches) {
    const auto& statuses = batch->statuses();
    carried.insert(carried.end(), statuses.begin(), statuses.end());
  }
  std::vector<io::ReadStatus> reads;
  reads.reserve(flight.carried_by.size());
  for (std::size_t i = 0; i < flight.carried_by.size(); ++i) {
    const auto [read, offset] = flight.carried_by[i];
    io::ReadStatus status = carried[read];
    if (status.ok()) status.bytes_read = std::min(stored_sizes[i], status.bytes_read > offset ? status.bytes_read - offset : 0);
    reads.push_back(std::move(status));
  }
  return reads;
}

}  // namespace headrace::queue
