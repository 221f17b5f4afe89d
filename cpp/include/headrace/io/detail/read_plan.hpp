// How every backend turns a submit() into work: requests are cut into tasks, the end of the file
// is found once, and per-request messages are built the same way everywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "headrace/io/backend.hpp"

namespace headrace::io::detail {

// One piece of one request: file bytes [file_offset, file_offset + size_bytes) go to destination.
struct ReadTask {
  std::size_t request_index = 0;
  std::uint64_t file_offset = 0;
  std::uint64_t size_bytes = 0;
  std::byte* destination = nullptr;
};

// Where requests are cut into tasks of at most task_size_bytes (a multiple of 4096).
enum class TaskCut : std::uint8_t {
  // At file offsets that are multiples of task_size_bytes, so a task's 4096-aligned cover never
  // exceeds task_size_bytes: one bounce buffer of that size fits any task (O_DIRECT, io_uring).
  at_file_offsets,
  // Every task_size_bytes from the request's start: a request no larger than a task is one task, read
  // by one thread, whose on_landed then finds all of its bytes in that core's cache (buffered reads).
  from_request_start,
};

// Cuts requests into tasks. Records the parts on batch, completes size-0 requests at once, and
// completes the end-of-file part of a request that passes file_size_bytes (its bytes up to the end
// still come).
[[nodiscard]] std::vector<ReadTask> plan_reads(const std::vector<ReadRequest>& requests, std::uint64_t file_size_bytes,
                                               std::uint64_t task_size_bytes, const std::string& path, ReadBatch& batch,
                                               TaskCut cut = TaskCut::at_file_offsets);

// "path: offset O: expected S bytes, found end of file at E [file:line]"
[[nodiscard]] std::string end_of_file_message(const std::string& path, std::uint64_t file_offset, std::uint64_t size_bytes,
                                              std::uint64_t end_of_file_offset, const char* source_file, int source_line);
// "call(path, offset O) failed: strerror [file:line]"
[[nodiscard]] std::string read_error_message(const char* call, const std::string& path, std::uint64_t file_offset,
                                             int error_number, const char* source_file, int source_line);

[[nodiscard]] constexpr std::uint64_t align_down(std::uint64_t value, std::uint64_t alignment) noexcept {
  return value - value % alignment;
}
[[nodiscard]] constexpr std::uint64_t align_up(std::uint64_t value, std::uint64_t alignment) noexcept {
  return align_down(value + alignment - 1, alignment);
}

}  // namespace headrace::io::detail
