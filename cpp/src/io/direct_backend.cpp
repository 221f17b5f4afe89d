#include "headrace/io/direct_backend.hpp"

#include <cstdint>
#include <cstring>
#include <utility>

#include "headrace/detail/byte_size.hpp"

namespace headrace::io {
namespace {

constexpr std::uint64_t alignment = headrace::detail::io_alignment_bytes;

bool is_aligned(const detail::ReadTask& task) {
  return task.file_offset % alignment == 0 && task.size_bytes % alignment == 0 &&
         reinterpret_cast<std::uintptr_t>(task.destination) % alignment == 0;
}

std::vector<headrace::detail::AlignedBuffer> make_bounce_buffers(const Settings& settings) {
  std::vector<headrace::detail::AlignedBuffer> buffers;
  buffers.reserve(settings.threads);
  for (unsigned i = 0; i < settings.threads; ++i) buffers.emplace_back(settings.task_size_bytes);
  return buffers;
}

}  // namespace

DirectBackend::DirectBackend(const std::string& path, const Settings& settings)
    : DirectBackend(detail::open_for_reading(path, true), path, settings) {}

DirectBackend::DirectBackend(detail::OpenedFile file, const std::string& path, const Settings& settings)
    : Backend(path, file.size_bytes),
      settings_(settings),
      fd_(std::move(file.fd)),
      bounce_buffers_(make_bounce_buffers(settings)),
      runner_(path, file.size_bytes, settings.task_size_bytes, settings.threads,
              [this](const detail::ReadTask& task, unsigned worker) { return read_task(task, worker); }) {}

std::string DirectBackend::describe() const {
  return "direct threads=" + std::to_string(settings_.threads) +
         " task=" + headrace::detail::format_byte_size(settings_.task_size_bytes);
}

std::shared_ptr<ReadBatch> DirectBackend::submit(std::vector<ReadRequest> requests) {
  return runner_.submit(std::move(requests));
}

detail::TaskOutcome DirectBackend::read_task(const detail::ReadTask& task, unsigned worker_index) const {
  if (is_aligned(task)) {
    const auto got = detail::pread_until(fd_.get(), task.destination, task.size_bytes, task.file_offset,
                                         task.size_bytes, true);
    return detail::pread_task_outcome(got, task, task.file_offset, task.size_bytes, true, path());
  }
  // Read the covering aligned range; at the end of the file O_DIRECT returns it short, and only
  // the bytes up to offset + size are wanted.
  const std::uint64_t cover_offset = detail::align_down(task.file_offset, alignment);
  const std::uint64_t cover_bytes = detail::align_up(task.file_offset + task.size_bytes, alignment) - cover_offset;
  const std::uint64_t wanted_bytes = task.file_offset + task.size_bytes - cover_offset;
  std::byte* bounce = bounce_buffers_[worker_index].data();
  const auto got = detail::pread_until(fd_.get(), bounce, cover_bytes, cover_offset, wanted_bytes, true);
  const auto outcome = detail::pread_task_outcome(got, task, cover_offset, wanted_bytes, false, path());
  if (outcome.error_number == 0) std::memcpy(task.destination, bounce + (task.file_offset - cover_offset), task.size_bytes);
  return outcome;
}

}  // namespace headrace::io
