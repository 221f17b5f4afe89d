// uring: reads through one io_uring owned by a worker thread, which keeps up to queue_depth reads
// in flight and hands the kernel submit_batch of them per io_uring_submit. Options: O_DIRECT (with
// aligned bounce buffers for unaligned requests), registered files, registered bounce buffers.
// liburing stays out of this header (pimpl) so users of headrace need not have it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "headrace/io/backend.hpp"

namespace headrace::io {

// Why io_uring cannot be used here with settings (headrace built without liburing, or
// io_uring_queue_init refused, e.g. by a seccomp filter), or nullopt when it can. O_DIRECT is not
// checked here: that depends on the file (see unavailable_reason in backend.hpp).
[[nodiscard]] std::optional<std::string> uring_unavailable_reason(const Settings& settings);

class UringBackend final : public Backend {
 public:
  // Throws FileNotFoundError when path cannot be opened, UnavailableError when io_uring (or O_DIRECT
  // on path, or a registration) cannot work here.
  UringBackend(const std::string& path, const Settings& settings);
  // Waits for every queued and in-flight read (the kernel must not write into freed buffers).
  ~UringBackend() override;
  UringBackend(const UringBackend&) = delete;
  UringBackend& operator=(const UringBackend&) = delete;

  [[nodiscard]] BackendKind kind() const noexcept override { return BackendKind::uring; }
  [[nodiscard]] std::string describe() const override;
  // Thread-safe: queues the reads to the worker.
  [[nodiscard]] std::shared_ptr<ReadBatch> submit(std::vector<ReadRequest> requests) override;

 private:
  class Ring;
  UringBackend(std::unique_ptr<Ring> ring, const std::string& path);

  std::unique_ptr<Ring> ring_;
};

}  // namespace headrace::io
