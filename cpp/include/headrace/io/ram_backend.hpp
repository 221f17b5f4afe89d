// ram: the whole file is read into memory at open; submit() copies from there on a pool of
// threads. The streaming-from-RAM baseline of seed 000: what the other backends would reach if
// storage were free.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "headrace/detail/aligned_buffer.hpp"
#include "headrace/io/backend.hpp"
#include "headrace/io/detail/file_reads.hpp"
#include "headrace/io/detail/task_runner.hpp"

namespace headrace::io {

class RamBackend final : public Backend {
 public:
  // Throws FileNotFoundError when path cannot be opened, SystemError when reading it fails,
  // TruncatedFileError when it shrinks while being read, std::bad_alloc when it does not fit.
  RamBackend(const std::string& path, const Settings& settings);

  [[nodiscard]] BackendKind kind() const noexcept override { return BackendKind::ram; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::shared_ptr<ReadBatch> submit(std::vector<ReadRequest> requests) override;

 private:
  RamBackend(detail::OpenedFile file, const std::string& path, const Settings& settings);

  Settings settings_;
  // Aligned buffer rather than std::vector: no zero fill of gigabytes before they are read over.
  headrace::detail::AlignedBuffer contents_;
  detail::TaskRunner runner_;  // last: drains before contents_ is freed
};

}  // namespace headrace::io
