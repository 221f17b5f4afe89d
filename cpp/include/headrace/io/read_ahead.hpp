// The kernel asked to read a file into the page cache ahead of its readers (posix_fadvise WILLNEED), on a
// thread of its own: WILLNEED submits the reads itself and blocks while the disk's queue is full, which
// no reader and no dispatcher should wait on. Cache policy keep uses it so that its buffered reads find
// their pages coming at the disk's rate: buffered reads alone leave the disk a few small read-aheads at a
// time (1.1 to 1.2 GB/s on the H200 machine's disk, O_DIRECT 1.5 to 1.7; docs/results.md).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "headrace/detail/file_descriptor.hpp"

namespace headrace::io {

class ReadAhead {
 public:
  // Opens path (buffered) for its own advice; throws SystemError when it cannot be opened.
  ReadAhead(const std::string& path, std::uint64_t file_size, std::uint64_t ahead_bytes);
  ~ReadAhead() noexcept;
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // A read of the file up to `end` is coming: the kernel is asked for everything up to end plus the
  // distance ahead that it was not asked for yet. Cheap: it only moves a mark the thread follows.
  void want(std::uint64_t end);
  // Bytes the kernel was asked for so far (tests).
  [[nodiscard]] std::uint64_t advised_bytes() const;

 private:
  void run() noexcept;

  headrace::detail::FileDescriptor fd_;
  std::uint64_t file_size_;
  std::uint64_t ahead_bytes_;
  mutable std::mutex mutex_;
  std::condition_variable wanted_changed_;
  std::uint64_t wanted_ = 0, advised_ = 0;
  bool stopping_ = false;
  std::thread thread_;  // last: started once everything it reads exists
};

}  // namespace headrace::io
