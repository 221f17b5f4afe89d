// mmap: copies out of read-only private mappings of the file on a pool of threads. The three
// mapping policies are the "map everything", "map individually" and "map batches" methods of
// seed 000; the optional periodic madvise(MADV_DONTNEED) is seed 002's page cache management.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <semaphore>
#include <string>
#include <vector>

#include "headrace/detail/file_descriptor.hpp"
#include "headrace/detail/memory_mapping.hpp"
#include "headrace/io/backend.hpp"
#include "headrace/io/detail/file_reads.hpp"
#include "headrace/io/detail/task_runner.hpp"

namespace headrace::io {

class MmapBackend final : public Backend {
 public:
  // Throws FileNotFoundError when path cannot be opened and SystemError when the whole-file
  // mapping fails.
  MmapBackend(const std::string& path, const Settings& settings);

  [[nodiscard]] BackendKind kind() const noexcept override { return BackendKind::mmap; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::shared_ptr<ReadBatch> submit(std::vector<ReadRequest> requests) override;

 private:
  MmapBackend(detail::OpenedFile file, const std::string& path, const Settings& settings);
  [[nodiscard]] detail::TaskOutcome read_task(const detail::ReadTask& task);
  // Copies the task's bytes out of mapping, whose data() is file offset mapping_file_offset, and
  // applies the madvise period.
  void copy_out(const detail::ReadTask& task, const headrace::detail::MemoryMapping& mapping,
                std::uint64_t mapping_file_offset);

  Settings settings_;
  headrace::detail::FileDescriptor fd_;
  headrace::detail::MemoryMapping whole_file_;  // whole mode only
  std::counting_semaphore<> window_;           // window mode: free mapping slots
  std::atomic<std::uint64_t> copied_bytes_{0};  // for the madvise period
  detail::TaskRunner runner_;                   // last: drains before mappings and fd_ go
};

}  // namespace headrace::io
