#include "headrace/io/posix_backend.hpp"

#include <utility>

#include "headrace/detail/byte_size.hpp"

namespace headrace::io {

PosixBackend::PosixBackend(const std::string& path, const Settings& settings)
    : PosixBackend(detail::open_for_reading(path, false), path, settings) {}

PosixBackend::PosixBackend(detail::OpenedFile file, const std::string& path, const Settings& settings)
    : Backend(path, file.size_bytes),
      settings_(settings),
      fd_(std::move(file.fd)),
      runner_(path, file.size_bytes, settings.task_size_bytes, settings.threads,
              [this](const detail::ReadTask& task, unsigned) { return read_task(task); },
              detail::TaskCut::from_request_start) {}

std::string PosixBackend::describe() const {
  return "posix threads=" + std::to_string(settings_.threads) +
         " task=" + headrace::detail::format_byte_size(settings_.task_size_bytes);
}

std::shared_ptr<ReadBatch> PosixBackend::submit(std::vector<ReadRequest> requests) {
  return runner_.submit(std::move(requests));
}

detail::TaskOutcome PosixBackend::read_task(const detail::ReadTask& task) const {
  const auto got = detail::pread_until(fd_.get(), task.destination, task.size_bytes, task.file_offset,
                                       task.size_bytes, false);
  return detail::pread_task_outcome(got, task, task.file_offset, task.size_bytes, true, path());
}

}  // namespace headrace::io
