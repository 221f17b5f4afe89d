// posix: buffered pread(2) on a pool of threads; the page cache serves repeated reads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "headrace/detail/file_descriptor.hpp"
#include "headrace/io/backend.hpp"
#include "headrace/io/detail/file_reads.hpp"
#include "headrace/io/detail/task_runner.hpp"

namespace headrace::io {

class PosixBackend final : public Backend {
 public:
  // Throws FileNotFoundError when path cannot be opened.
  PosixBackend(const std::string& path, const Settings& settings);

  [[nodiscard]] BackendKind kind() const noexcept override { return BackendKind::posix; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::shared_ptr<ReadBatch> submit(std::vector<ReadRequest> requests) override;

 private:
  PosixBackend(detail::OpenedFile file, const std::string& path, const Settings& settings);
  [[nodiscard]] detail::TaskOutcome read_task(const detail::ReadTask& task) const;

  Settings settings_;
  headrace::detail::FileDescriptor fd_;
  detail::TaskRunner runner_;  // last: drains before fd_ closes
};

}  // namespace headrace::io
