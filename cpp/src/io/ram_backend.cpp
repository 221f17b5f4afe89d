#include "headrace/io/ram_backend.hpp"

#include <cstring>
#include <utility>

#include "headrace/detail/byte_size.hpp"
#include "headrace/error.hpp"

namespace headrace::io {
namespace {

headrace::detail::AlignedBuffer load(const detail::OpenedFile& file, const std::string& path) {
  headrace::detail::AlignedBuffer contents(file.size_bytes);
  const auto got = detail::pread_until(file.fd.get(), contents.data(), file.size_bytes, 0, file.size_bytes, false);
  if (got.error_number != 0) {
    throw SystemError(detail::read_error_message("pread", path, got.bytes_read, got.error_number, __FILE__, __LINE__),
                      got.error_number);
  }
  if (got.bytes_read < file.size_bytes) {
    throw TruncatedFileError(
        detail::end_of_file_message(path, 0, file.size_bytes, got.bytes_read, __FILE__, __LINE__));
  }
  return contents;
}

}  // namespace

RamBackend::RamBackend(const std::string& path, const Settings& settings)
    : RamBackend(detail::open_for_reading(path, false), path, settings) {}

// The descriptor closes when file goes out of scope: every later read is a memcpy.
RamBackend::RamBackend(detail::OpenedFile file, const std::string& path, const Settings& settings)
    : Backend(path, file.size_bytes),
      settings_(settings),
      contents_(load(file, path)),
      runner_(path, file.size_bytes, settings.task_size_bytes, settings.threads,
              [this](const detail::ReadTask& task, unsigned) -> detail::TaskOutcome {
                std::memcpy(task.destination, contents_.data() + task.file_offset, task.size_bytes);
                return {task.size_bytes, 0, {}};
              }) {}

std::string RamBackend::describe() const {
  return "ram threads=" + std::to_string(settings_.threads) +
         " task=" + headrace::detail::format_byte_size(settings_.task_size_bytes) +
         " preloaded=" + headrace::detail::format_byte_size(file_size());
}

std::shared_ptr<ReadBatch> RamBackend::submit(std::vector<ReadRequest> requests) {
  return runner_.submit(std::move(requests));
}

}  // namespace headrace::io
