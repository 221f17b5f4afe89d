#include "headrace/io/detail/task_runner.hpp"

#include <utility>

#include "headrace/detail/thread_name.hpp"
#include "headrace/error.hpp"

namespace headrace::io::detail {

TaskOutcome pread_task_outcome(const PreadOutcome& got, const ReadTask& task, std::uint64_t read_offset,
                               std::uint64_t wanted_bytes, bool into_destination, const std::string& path) {
  if (got.error_number == 0 && got.bytes_read >= wanted_bytes) return {task.size_bytes, 0, {}};
  const std::uint64_t landed = into_destination ? got.bytes_read : 0;
  const std::uint64_t stopped_at = read_offset + got.bytes_read;
  if (got.error_number != 0) {
    return {landed, got.error_number,
            read_error_message("pread", path, stopped_at, got.error_number, __FILE__, __LINE__)};
  }
  return {landed, ReadStatus::end_of_file_error_number,
          end_of_file_message(path, task.file_offset, task.size_bytes, stopped_at, __FILE__, __LINE__)};
}

TaskRunner::TaskRunner(std::string path, std::uint64_t file_size_bytes, std::uint64_t task_size_bytes,
                       unsigned thread_count, ReadFunction read, TaskCut cut)
    : path_(std::move(path)),
      file_size_bytes_(file_size_bytes),
      task_size_bytes_(task_size_bytes),
      read_(std::move(read)),
      cut_(cut),
      pool_(thread_count, headrace::detail::reader_thread_name) {}

std::shared_ptr<ReadBatch> TaskRunner::submit(std::vector<ReadRequest> requests) {
  auto batch = std::make_shared<ReadBatch>(std::span<ReadRequest>(requests));
  for (const ReadTask& task : plan_reads(requests, file_size_bytes_, task_size_bytes_, path_, *batch, cut_)) {
    pool_.submit([this, task, batch](unsigned worker_index) {
      TaskOutcome outcome;
      try {
        outcome = read_(task, worker_index);
      } catch (const SystemError& error) {
        outcome = TaskOutcome{0, error.error_number(), error.what()};
      }
      batch->complete_part(task.request_index, outcome.bytes_read, outcome.error_number, outcome.message);
    });
  }
  return batch;
}

}  // namespace headrace::io::detail
