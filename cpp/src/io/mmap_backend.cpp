#include "headrace/io/mmap_backend.hpp"

#include <cstring>
#include <utility>

#include "headrace/detail/byte_size.hpp"

namespace headrace::io {
namespace {

headrace::detail::MemoryMapping map_whole_file(int fd, std::uint64_t file_size_bytes, const std::string& path,
                                               MmapMode mode) {
  // mmap(2) refuses length 0; an empty file has nothing to copy anyway.
  if (mode != MmapMode::whole || file_size_bytes == 0) return {};
  return headrace::detail::MemoryMapping::map_read(fd, 0, file_size_bytes, path);
}

}  // namespace

MmapBackend::MmapBackend(const std::string& path, const Settings& settings)
    : MmapBackend(detail::open_for_reading(path, false), path, settings) {}

MmapBackend::MmapBackend(detail::OpenedFile file, const std::string& path, const Settings& settings)
    : Backend(path, file.size_bytes),
      settings_(settings),
      fd_(std::move(file.fd)),
      whole_file_(map_whole_file(fd_.get(), file.size_bytes, path, settings.mmap_mode)),
      window_(static_cast<std::ptrdiff_t>(settings.mmap_window_segments)),
      runner_(path, file.size_bytes, settings.task_size_bytes, settings.threads,
              [this](const detail::ReadTask& task, unsigned) { return read_task(task); }) {}

std::string MmapBackend::describe() const {
  std::string text = "mmap mode=" + std::string(to_string(settings_.mmap_mode));
  if (settings_.mmap_mode == MmapMode::window) text += " window=" + std::to_string(settings_.mmap_window_segments);
  text += " threads=" + std::to_string(settings_.threads) +
          " task=" + headrace::detail::format_byte_size(settings_.task_size_bytes) + " dontneed=" +
          (settings_.mmap_dontneed_bytes == 0 ? std::string("off")
                                              : headrace::detail::format_byte_size(settings_.mmap_dontneed_bytes));
  return text;
}

std::shared_ptr<ReadBatch> MmapBackend::submit(std::vector<ReadRequest> requests) {
  return runner_.submit(std::move(requests));
}

detail::TaskOutcome MmapBackend::read_task(const detail::ReadTask& task) {
  if (settings_.mmap_mode == MmapMode::whole) {
    copy_out(task, whole_file_, 0);
    return {task.size_bytes, 0, {}};
  }
  const std::string what = path() + ", offset " + std::to_string(task.file_offset);
  if (settings_.mmap_mode == MmapMode::segment) {
    const auto mapping = headrace::detail::MemoryMapping::map_read(fd_.get(), task.file_offset, task.size_bytes, what);
    copy_out(task, mapping, task.file_offset);
    return {task.size_bytes, 0, {}};
  }
  window_.acquire();
  try {
    auto mapping = headrace::detail::MemoryMapping::map_read(fd_.get(), task.file_offset, task.size_bytes, what);
    copy_out(task, mapping, task.file_offset);
    mapping.close();  // before the slot is given back, so at most window mappings ever exist
  } catch (...) {
    window_.release();
    throw;
  }
  window_.release();
  return {task.size_bytes, 0, {}};
}

void MmapBackend::copy_out(const detail::ReadTask& task, const headrace::detail::MemoryMapping& mapping,
                           std::uint64_t mapping_file_offset) {
  std::memcpy(task.destination, mapping.data() + (task.file_offset - mapping_file_offset), task.size_bytes);
  const std::uint64_t period = settings_.mmap_dontneed_bytes;
  if (period == 0) return;
  const std::uint64_t before = copied_bytes_.fetch_add(task.size_bytes, std::memory_order_relaxed);
  // The copy that crosses a multiple of the period advises; others racing on the same mapping
  // simply fault their pages back in from the file (the mapping is private and never written).
  if (before / period != (before + task.size_bytes) / period) mapping.advise_dontneed();
}

}  // namespace headrace::io
