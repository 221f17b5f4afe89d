// The submit() of the thread-pool backends (posix, direct, mmap, ram): plan the tasks, run each on
// a worker, land its outcome on the batch. A backend supplies only how one task is read.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "headrace/detail/thread_pool.hpp"
#include "headrace/io/backend.hpp"
#include "headrace/io/detail/file_reads.hpp"
#include "headrace/io/detail/read_plan.hpp"

namespace headrace::io::detail {

struct TaskOutcome {
  std::uint64_t bytes_read = 0;
  int error_number = 0;
  std::string message;  // empty on success
};

// The outcome of a task read by pread_until into a buffer holding file bytes from read_offset on:
// an error names pread and the offset where it failed; fewer than wanted_bytes means the file
// shrank after open. into_destination says whether the bytes read already sit in the destination
// (they count as read on failure) or in a bounce buffer (they do not).
[[nodiscard]] TaskOutcome pread_task_outcome(const PreadOutcome& got, const ReadTask& task, std::uint64_t read_offset,
                                             std::uint64_t wanted_bytes, bool into_destination, const std::string& path);

class TaskRunner {
 public:
  // Runs on a pool worker; may throw SystemError, which becomes the task's outcome.
  using ReadFunction = std::function<TaskOutcome(const ReadTask& task, unsigned worker_index)>;

  TaskRunner(std::string path, std::uint64_t file_size_bytes, std::uint64_t task_size_bytes, unsigned thread_count,
             ReadFunction read, TaskCut cut = TaskCut::at_file_offsets);

  [[nodiscard]] std::shared_ptr<ReadBatch> submit(std::vector<ReadRequest> requests);

 private:
  std::string path_;
  std::uint64_t file_size_bytes_;
  std::uint64_t task_size_bytes_;
  ReadFunction read_;
  TaskCut cut_;
  // Last: its destructor runs every queued task before the members above (and the owning
  // backend's fd or mapping, declared before the runner) go away.
  headrace::detail::ThreadPool pool_;
};

}  // namespace headrace::io::detail
