#include "headrace/io/cufile_backend.hpp"

#include <utility>

#include "headrace/detail/byte_size.hpp"
#include "headrace/error.hpp"

namespace headrace::io {

CufileBackend::CufileBackend(const std::string& path, const Settings& settings, gpu::CUcontext context)
    : CufileBackend(CufileReader(path, context), settings) {}

CufileBackend::CufileBackend(CufileReader reader, const Settings& settings)
    : Backend(reader.path(), reader.file_size()),
      settings_(settings),
      reader_(std::move(reader)),
      runner_(path(), file_size(), settings.task_size_bytes, settings.threads,
              [this](const detail::ReadTask& task, unsigned) { return read_task(task); }) {}

std::string CufileBackend::describe() const {
  return "cufile mode=" + std::string(shim::to_string(reader_.mode())) + " (" + reader_.mode_reason() +
         ") threads=" + std::to_string(settings_.threads) + " task=" + headrace::detail::format_byte_size(settings_.task_size_bytes);
}

std::shared_ptr<ReadBatch> CufileBackend::submit(std::vector<ReadRequest> requests) {
  return runner_.submit(std::move(requests));
}

detail::TaskOutcome CufileBackend::read_task(const detail::ReadTask& task) const {
  // plan_reads cut the request at the end of the file, so a short read means the file shrank.
  const auto destination = static_cast<gpu::CUdeviceptr>(reinterpret_cast<std::uintptr_t>(task.destination));
  const std::uint64_t got = reader_.read(destination, task.size_bytes, task.file_offset);  // SystemError: the task fails
  if (got == task.size_bytes) return {got, 0, {}};
  return {got, ReadStatus::end_of_file_error_number,
          detail::end_of_file_message(path(), task.file_offset, task.size_bytes, task.file_offset + got, __FILE__, __LINE__)};
}

}  // namespace headrace::io
