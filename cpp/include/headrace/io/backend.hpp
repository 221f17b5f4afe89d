// One request interface for every I/O backend: read N ranges of one file into N destinations (host
// memory; GPU memory for cufile), complete asynchronously, report an error per request (never throw
// for one).
#pragma once

#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "headrace/detail/enum_names.hpp"
#include "headrace/settings.hpp"

namespace headrace::io {

enum class BackendKind : std::uint8_t { posix, direct, mmap, uring, ram, cufile };

inline constexpr detail::EnumNames<BackendKind, 6> backend_kind_names{{{BackendKind::posix, "posix"},
                                                                       {BackendKind::direct, "direct"},
                                                                       {BackendKind::mmap, "mmap"},
                                                                       {BackendKind::uring, "uring"},
                                                                       {BackendKind::ram, "ram"},
                                                                       {BackendKind::cufile, "cufile"}}};
[[nodiscard]] constexpr const char* to_string(BackendKind kind) noexcept { return detail::name_of(backend_kind_names, kind); }
// Throws UsageError naming the choices.
[[nodiscard]] inline BackendKind parse_backend_kind(const std::string& name) {
  return detail::parse_name(backend_kind_names, name, "backend");
}
[[nodiscard]] constexpr bool reads_into_gpu(BackendKind kind) noexcept { return kind == BackendKind::cufile; }
// The backends that read into host memory (every kind but cufile).
[[nodiscard]] std::vector<BackendKind> all_backend_kinds();

struct ReadRequest {
  std::uint64_t file_offset = 0;
  std::uint64_t size_bytes = 0;
  void* destination = nullptr;  // host memory of at least size_bytes, any alignment (cufile: a CUdeviceptr)
  // Runs once the request was read whole without error, in the thread that read its last part, before
  // the batch counts it done: work on the bytes while they are in that core's cache (a checksum).
  std::function<void()> on_landed = {};
};

struct ReadStatus {
  // error_number of a request that reached the end of the file before size_bytes: bad data (the
  // file is shorter than the caller expected), not a failed call; check() throws TruncatedFileError.
  static constexpr int end_of_file_error_number = ENODATA;

  std::uint64_t bytes_read = 0;
  int error_number = 0;  // errno of the failure, 0 on success
  std::string message;   // names the path, the offset and the call; empty on success
  [[nodiscard]] bool ok() const noexcept { return error_number == 0 && message.empty(); }
  // A failed read as an error: TruncatedFileError at the end of the file, else SystemError.
  [[nodiscard]] std::exception_ptr error() const;
};

// The completion of one submit(): statuses fill in as requests finish, in any order.
class ReadBatch {
 public:
  explicit ReadBatch(std::size_t request_count);
  // Takes each request's on_landed (and its size, to know it was read whole).
  explicit ReadBatch(std::span<ReadRequest> requests);
  [[nodiscard]] bool is_done() const;
  void wait() const;
  // Waits, then returns one status per request, in request order.
  [[nodiscard]] const std::vector<ReadStatus>& statuses() const;
  // Waits; throws SystemError (or BadDataError for end of file) for the first failed request.
  void check() const;

  // For backends: records the outcome of one request. Each index is completed exactly once.
  void complete(std::size_t index, ReadStatus status);
  // For backends: a request finished a part; completes it when its last part lands.
  void set_parts(std::size_t index, std::uint32_t parts);
  void complete_part(std::size_t index, std::uint64_t bytes, int error_number, const std::string& message);

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable done_;
  // The request is read (its last part landed): runs its on_landed without the lock, then counts it.
  void finish_request(std::size_t index, std::unique_lock<std::mutex>& lock);

  std::vector<ReadStatus> statuses_;
  std::vector<std::uint32_t> parts_left_;
  std::vector<std::function<void()>> landed_;  // empty, or one per request
  std::vector<std::uint64_t> sizes_;           // with landed_
  std::size_t remaining_;
};

// Knobs every backend reads; built from settings() unless given.
struct BackendOptions {
  Settings settings = headrace::settings();
  void* gpu_context = nullptr;  // cufile: the CUcontext its workers make current (required)
};

class Backend {
 public:
  virtual ~Backend() = default;
  [[nodiscard]] virtual BackendKind kind() const noexcept = 0;
  // The knobs in effect, for reports ("threads=16 task=4MiB").
  [[nodiscard]] virtual std::string describe() const = 0;
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] std::uint64_t file_size() const noexcept { return file_size_; }
  // Starts every request; returns at once. Destinations must stay valid until the batch is done.
  [[nodiscard]] virtual std::shared_ptr<ReadBatch> submit(std::vector<ReadRequest> requests) = 0;
  // submit() and wait.
  std::vector<ReadStatus> read(std::vector<ReadRequest> requests);

 protected:
  Backend(std::string path, std::uint64_t file_size) : path_(std::move(path)), file_size_(file_size) {}

 private:
  std::string path_;
  std::uint64_t file_size_;
};

// Why kind cannot read path on this machine (no liburing, no O_DIRECT on this file system), or
// nullopt when it can.
[[nodiscard]] std::optional<std::string> unavailable_reason(BackendKind kind, const std::string& path);

// Opens path with kind; throws UnavailableError (with the reason) when it cannot work here and
// FileNotFoundError when path cannot be opened.
[[nodiscard]] std::unique_ptr<Backend> open_backend(BackendKind kind, const std::string& path,
                                                    const BackendOptions& options = {});

}  // namespace headrace::io
