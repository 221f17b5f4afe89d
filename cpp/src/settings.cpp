#include "headrace/settings.hpp"

#include <string>

#include "headrace/detail/environment.hpp"
#include "headrace/error.hpp"

namespace headrace {
namespace {

using detail::environment;
using detail::parse_bool;
using detail::parse_unsigned;

Settings from_environment() {
  Settings s;
  if (auto v = environment("HEADRACE_THREADS")) s.threads = static_cast<unsigned>(parse_unsigned("HEADRACE_THREADS", *v));
  if (auto v = environment("HEADRACE_TASK_SIZE_BYTES")) s.task_size_bytes = parse_unsigned("HEADRACE_TASK_SIZE_BYTES", *v);
  if (auto v = environment("HEADRACE_QUEUE_DEPTH")) s.queue_depth = static_cast<unsigned>(parse_unsigned("HEADRACE_QUEUE_DEPTH", *v));
  if (auto v = environment("HEADRACE_SUBMIT_BATCH")) s.submit_batch = static_cast<unsigned>(parse_unsigned("HEADRACE_SUBMIT_BATCH", *v));
  if (auto v = environment("HEADRACE_URING_REGISTER_BUFFERS")) s.uring_register_buffers = parse_bool("HEADRACE_URING_REGISTER_BUFFERS", *v);
  if (auto v = environment("HEADRACE_URING_REGISTER_FILES")) s.uring_register_files = parse_bool("HEADRACE_URING_REGISTER_FILES", *v);
  if (auto v = environment("HEADRACE_URING_O_DIRECT")) s.uring_o_direct = parse_bool("HEADRACE_URING_O_DIRECT", *v);
  if (auto v = environment("HEADRACE_MMAP_MODE")) s.mmap_mode = parse_mmap_mode(*v);
  if (auto v = environment("HEADRACE_MMAP_WINDOW_SEGMENTS")) s.mmap_window_segments = static_cast<unsigned>(parse_unsigned("HEADRACE_MMAP_WINDOW_SEGMENTS", *v));
  if (auto v = environment("HEADRACE_MMAP_DONTNEED_BYTES")) s.mmap_dontneed_bytes = parse_unsigned("HEADRACE_MMAP_DONTNEED_BYTES", *v);
  s.validate();
  return s;
}

Settings& current() {
  static Settings value = from_environment();
  return value;
}

}  // namespace

void Settings::validate() const {
  HEADRACE_EXPECT(threads >= 1 && threads <= 1024, UsageError, "threads must be in 1..1024, got " + std::to_string(threads));
  // Each reading thread holds a task's bytes (O_DIRECT bounce buffers): 256 MiB bounds that memory.
  HEADRACE_EXPECT(task_size_bytes >= 4096 && task_size_bytes <= (std::uint64_t{256} << 20) && task_size_bytes % 4096 == 0,
                  UsageError, "task_size_bytes must be a multiple of 4096 in 4 KiB..256 MiB, got " + std::to_string(task_size_bytes));
  HEADRACE_EXPECT(queue_depth >= 1 && queue_depth <= 4096, UsageError, "queue_depth must be in 1..4096, got " + std::to_string(queue_depth));
  HEADRACE_EXPECT(submit_batch >= 1 && submit_batch <= queue_depth, UsageError,
                  "submit_batch must be in 1..queue_depth, got " + std::to_string(submit_batch));
  HEADRACE_EXPECT(mmap_window_segments >= 1 && mmap_window_segments <= 65536, UsageError,
                  "mmap_window_segments must be in 1..65536, got " + std::to_string(mmap_window_segments));
  HEADRACE_EXPECT(mmap_dontneed_bytes <= (std::uint64_t{1} << 40), UsageError,
                  "mmap_dontneed_bytes must be in 0..1 TiB (0: never), got " + std::to_string(mmap_dontneed_bytes));
}

const Settings& settings() { return current(); }

ScopedSettings::ScopedSettings(const Settings& replacement) : previous_(current()) {
  replacement.validate();
  current() = replacement;
}

ScopedSettings::~ScopedSettings() noexcept { current() = previous_; }

}  // namespace headrace
