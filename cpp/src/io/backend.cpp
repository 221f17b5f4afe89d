#include "headrace/io/backend.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "headrace/error.hpp"
#include "headrace/io/cufile_backend.hpp"
#include "headrace/io/detail/file_reads.hpp"
#include "headrace/io/direct_backend.hpp"
#include "headrace/io/mmap_backend.hpp"
#include "headrace/io/posix_backend.hpp"
#include "headrace/io/ram_backend.hpp"
#include "headrace/io/uring_backend.hpp"

namespace headrace::io {

std::vector<BackendKind> all_backend_kinds() {
  std::vector<BackendKind> kinds;
  for (const auto& [kind, name] : backend_kind_names)
    if (!reads_into_gpu(kind)) kinds.push_back(kind);
  return kinds;
}

ReadBatch::ReadBatch(std::size_t request_count)
    : statuses_(request_count), parts_left_(request_count, 1), remaining_(request_count) {}

ReadBatch::ReadBatch(std::span<ReadRequest> requests) : ReadBatch(requests.size()) {
  if (std::none_of(requests.begin(), requests.end(), [](const ReadRequest& r) { return bool(r.on_landed); })) return;
  for (ReadRequest& r : requests) {
    landed_.push_back(std::move(r.on_landed));
    sizes_.push_back(r.size_bytes);
  }
}

void ReadBatch::finish_request(std::size_t index, std::unique_lock<std::mutex>& lock) {
  if (!landed_.empty() && landed_[index] && statuses_[index].ok() && statuses_[index].bytes_read == sizes_[index]) {
    const std::function<void()> landed = std::move(landed_[index]);
    lock.unlock();
    landed();
    lock.lock();
  }
  if (--remaining_ == 0) done_.notify_all();
}

bool ReadBatch::is_done() const {
  std::lock_guard lock(mutex_);
  return remaining_ == 0;
}

void ReadBatch::wait() const {
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return remaining_ == 0; });
}

const std::vector<ReadStatus>& ReadBatch::statuses() const {
  wait();
  return statuses_;  // no writer touches it once every request is done
}

std::exception_ptr ReadStatus::error() const {
  if (error_number == end_of_file_error_number) return std::make_exception_ptr(TruncatedFileError(message));
  return std::make_exception_ptr(SystemError(message, error_number));
}

void ReadBatch::check() const {
  for (const ReadStatus& status : statuses())
    if (!status.ok()) std::rethrow_exception(status.error());
}

void ReadBatch::complete(std::size_t index, ReadStatus status) {
  std::unique_lock lock(mutex_);
  HEADRACE_EXPECT(index < statuses_.size() && parts_left_[index] != 0, UsageError,
                  "request " + std::to_string(index) + " completed twice or does not exist");
  statuses_[index] = std::move(status);
  parts_left_[index] = 0;
  finish_request(index, lock);
}

void ReadBatch::set_parts(std::size_t index, std::uint32_t parts) {
  std::lock_guard lock(mutex_);
  HEADRACE_EXPECT(index < statuses_.size() && parts_left_[index] == 1 && parts >= 1, UsageError,
                  "set_parts(" + std::to_string(index) + ", " + std::to_string(parts) +
                      ") on a started, missing or empty request");
  parts_left_[index] = parts;
}

void ReadBatch::complete_part(std::size_t index, std::uint64_t bytes, int error_number, const std::string& message) {
  std::unique_lock lock(mutex_);
  HEADRACE_EXPECT(index < statuses_.size() && parts_left_[index] != 0, UsageError,
                  "a part of request " + std::to_string(index) + " completed after the request or does not exist");
  ReadStatus& status = statuses_[index];
  status.bytes_read += bytes;
  // The first failure of a request is the one reported; later parts often fail for the same reason.
  if ((error_number != 0 || !message.empty()) && status.ok()) {
    status.error_number = error_number;
    status.message = message;
  }
  if (--parts_left_[index] == 0) finish_request(index, lock);
}

std::vector<ReadStatus> Backend::read(std::vector<ReadRequest> requests) {
  return submit(std::move(requests))->statuses();
}

std::optional<std::string> unavailable_reason(BackendKind kind, const std::string& path) {
  switch (kind) {
    case BackendKind::direct: return detail::o_direct_unavailable_reason(path);
    case BackendKind::uring: {
      if (auto reason = uring_unavailable_reason(settings())) return reason;
      if (settings().uring_o_direct) return detail::o_direct_unavailable_reason(path);
      return std::nullopt;
    }
    case BackendKind::posix:
    case BackendKind::mmap:
    case BackendKind::ram: return std::nullopt;
    case BackendKind::cufile: {
      std::string why = cufile_unavailable_reason();
      return why.empty() ? std::nullopt : std::optional(std::move(why));
    }
  }
  return std::nullopt;
}

std::unique_ptr<Backend> open_backend(BackendKind kind, const std::string& path, const BackendOptions& options) {
  options.settings.validate();
  switch (kind) {
    case BackendKind::posix: return std::make_unique<PosixBackend>(path, options.settings);
    case BackendKind::direct: return std::make_unique<DirectBackend>(path, options.settings);
    case BackendKind::mmap: return std::make_unique<MmapBackend>(path, options.settings);
    case BackendKind::uring: return std::make_unique<UringBackend>(path, options.settings);
    case BackendKind::ram: return std::make_unique<RamBackend>(path, options.settings);
    case BackendKind::cufile:
      HEADRACE_EXPECT(options.gpu_context != nullptr, UsageError,
                      path + ": a cufile backend reads into GPU memory: give it the GPU's context (BackendOptions::gpu_context)");
      return std::make_unique<CufileBackend>(path, options.settings, static_cast<gpu::CUcontext>(options.gpu_context));
  }
  throw UsageError("unknown backend kind " + std::to_string(static_cast<int>(kind)));
}

}  // namespace headrace::io
