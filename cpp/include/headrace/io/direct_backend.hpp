// direct: pread(2) on an O_DIRECT descriptor (page cache bypassed, seed 003) on a pool of threads.
// Aligned requests land straight in their destination; others go through a per-worker aligned
// bounce buffer holding the covering 4096-aligned range.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "headrace/detail/aligned_buffer.hpp"
#include "headrace/detail/file_descriptor.hpp"
#include "headrace/io/backend.hpp"
#include "headrace/io/detail/file_reads.hpp"
#include "headrace/io/detail/task_runner.hpp"

namespace headrace::io {

class DirectBackend final : public Backend {
 public:
  // Throws FileNotFoundError when path cannot be opened and UnavailableError when its file system
  // refuses O_DIRECT.
  DirectBackend(const std::string& path, const Settings& settings);

  [[nodiscard]] BackendKind kind() const noexcept override { return BackendKind::direct; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::shared_ptr<ReadBatch> submit(std::vector<ReadRequest> requests) override;

 private:
  DirectBackend(detail::OpenedFile file, const std::string& path, const Settings& settings);
  [[nodiscard]] detail::TaskOutcome read_task(const detail::ReadTask& task, unsigned worker_index) const;

  Settings settings_;
  headrace::detail::FileDescriptor fd_;
  // One per worker, task_size_bytes each: a task's aligned cover never exceeds that (read_plan.hpp).
  std::vector<headrace::detail::AlignedBuffer> bounce_buffers_;
  detail::TaskRunner runner_;  // last: drains before the buffers and fd_ go
};

}  // namespace headrace::io
