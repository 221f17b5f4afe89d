// Typed run-time settings: one documented default each (docs/settings.md), overridable by the
// environment variable HEADRACE_<NAME>, parsed and validated once, and settable in a scope for tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "headrace/detail/enum_names.hpp"

namespace headrace {

enum class MmapMode : std::uint8_t {
  whole,    // one mapping of the whole file
  segment,  // one mapping per request, unmapped when it completes
  window,   // at most mmap_window_segments mappings in flight
};

struct Settings {
  // Worker threads of the thread-pool backends (posix, direct, mmap, ram). HEADRACE_THREADS.
  unsigned threads = 16;
  // Large requests are split into tasks of this size so threads share them. HEADRACE_TASK_SIZE_BYTES.
  std::uint64_t task_size_bytes = std::uint64_t{4} << 20;
  // io_uring: reads kept in flight. HEADRACE_QUEUE_DEPTH.
  unsigned queue_depth = 64;
  // io_uring: SQEs prepared before one io_uring_submit. HEADRACE_SUBMIT_BATCH.
  unsigned submit_batch = 8;
  // io_uring: read through registered (fixed) bounce buffers. HEADRACE_URING_REGISTER_BUFFERS.
  bool uring_register_buffers = false;
  // io_uring: register the file descriptor. HEADRACE_URING_REGISTER_FILES.
  bool uring_register_files = true;
  // io_uring: open the file with O_DIRECT (page cache bypassed). HEADRACE_URING_O_DIRECT.
  bool uring_o_direct = true;
  // mmap backend mapping policy. HEADRACE_MMAP_MODE = whole|segment|window.
  MmapMode mmap_mode = MmapMode::whole;
  // mmap window mode: mappings in flight at once. HEADRACE_MMAP_WINDOW_SEGMENTS.
  unsigned mmap_window_segments = 4;
  // mmap: madvise(MADV_DONTNEED) after this many bytes copied; 0 = never. HEADRACE_MMAP_DONTNEED_BYTES.
  std::uint64_t mmap_dontneed_bytes = 0;

  // Checks every value; throws UsageError naming the setting.
  void validate() const;
};

// The settings in effect: defaults overridden by the environment, read once.
[[nodiscard]] const Settings& settings();

// Replaces the settings in effect for its lifetime (tests, benchmarks). Not thread-safe against
// concurrent readers of settings(): set it before starting work.
class ScopedSettings {
 public:
  explicit ScopedSettings(const Settings& replacement);
  ~ScopedSettings() noexcept;
  ScopedSettings(const ScopedSettings&) = delete;
  ScopedSettings& operator=(const ScopedSettings&) = delete;

 private:
  Settings previous_;
};

inline constexpr detail::EnumNames<MmapMode, 3> mmap_mode_names{
    {{MmapMode::whole, "whole"}, {MmapMode::segment, "segment"}, {MmapMode::window, "window"}}};
// Throws UsageError naming the choices.
[[nodiscard]] inline MmapMode parse_mmap_mode(const std::string& text) { return detail::parse_name(mmap_mode_names, text, "mmap mode"); }
[[nodiscard]] constexpr const char* to_string(MmapMode mode) noexcept { return detail::name_of(mmap_mode_names, mode); }

}  // namespace headrace
