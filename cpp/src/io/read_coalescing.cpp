#include "headrace/io/read_coalescing.hpp"

#include <cstddef>

#include "headrace/error.hpp"

namespace headrace::io {

CoalescedReads coalesce_reads(const std::vector<ReadRequest>& requests, const std::vector<bool>& joinable,
                              const CoalescingLimits& limits) {
  HEADRACE_EXPECT(joinable.size() == requests.size(), UsageError,
                  "coalesce_reads: " + std::to_string(joinable.size()) + " joinable flags for " +
                      std::to_string(requests.size()) + " requests");
  CoalescedReads out;
  out.carried_by.reserve(requests.size());
  bool open_run = false;  // out.reads.back() may take more members
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const ReadRequest& next = requests[i];
    const std::uint64_t next_end = next.file_offset + next.size_bytes;
    if (open_run && joinable[i] && next_end <= limits.file_size) {
      ReadRequest& run = out.reads.back();
      const std::uint64_t run_end = run.file_offset + run.size_bytes;
      const auto memory_distance = static_cast<std::byte*>(next.destination) - static_cast<std::byte*>(run.destination);
      const std::uint64_t file_distance = next.file_offset - run.file_offset;
      if (next.file_offset >= run_end && next.file_offset - run_end <= limits.max_gap_bytes && memory_distance >= 0 &&
          static_cast<std::uint64_t>(memory_distance) == file_distance && next_end - run.file_offset <= limits.max_read_bytes) {
        run.size_bytes = next_end - run.file_offset;
        out.carried_by.emplace_back(out.reads.size() - 1, file_distance);
        continue;
      }
    }
    out.reads.push_back(next);
    out.carried_by.emplace_back(out.reads.size() - 1, 0);
    open_run = joinable[i] && next_end <= limits.file_size;
  }
  return out;
}

}  // namespace headrace::io
