// A DirectStorage-style request queue for Linux and CUDA (seed 000, algorithms 1 and 2; seed 001).
//
//   enqueue(request)      a file range or container chunk -> a host or GPU destination, maybe compressed
//   enqueue_signal()      a fence: signalled once every request enqueued before it is finished
//   submit()              hands everything enqueued so far to the dispatcher, which batches it
//   cancel(id), cancel_tag(tag)   a cancelled request never writes its destination
//   status(id)            per-request state, error and timings
//
// Data flow: dispatcher (priority order) -> host backend reads, straight into a host destination or
// into the staging ring (or cuFile reads straight into GPU memory) -> finisher: checksum, then CPU decode into a host destination, or H2D copy
// on the queue's copy stream and GPU decode (nvCOMP) into a device destination -> done. A fence's
// CUDA event is recorded on the copy stream once every earlier request's GPU work is issued, and
// the same moment writes the fence's value so that consumer streams can wait for it before it is
// reached (wait_on_stream: "fire and forget").
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "headrace/io/backend.hpp"
#include "headrace/queue/request.hpp"

namespace headrace::queue {

struct QueueOptions {
  io::BackendKind backend = io::BackendKind::uring;
  Settings io = settings();  // knobs of the backend
  int device = -1;           // GPU ordinal for device destinations; -1: host destinations only
  std::uint64_t staging_bytes = std::uint64_t{256} << 20;  // seed 001: >= 256 MiB
  unsigned max_batch = 64;                                 // requests per backend submit
  // Bytes of reads in flight straight into host destinations (those bypass staging).
  std::uint64_t max_direct_bytes = std::uint64_t{256} << 20;
  unsigned decode_threads = 0;  // CPU decoding; 0: hardware concurrency
  bool decode_on_gpu = true;    // device destinations: nvCOMP; false: decode on the CPU, then H2D
  // Device destinations are read by cuFile straight into GPU memory (GDS, or its compatibility mode),
  // by io.threads workers; host destinations still use `backend`.
  bool cufile = false;
  // Device destinations are copied by DMA straight from each file's page-cache pages, mapped and
  // page-locked when the file is added (gpu/pinned_file.hpp): no read, no CPU copy into staging.
  // Adding a file then reads it whole and keeps it in RAM: for hot data sets read again and again.
  bool pin_files = false;
  // Checks each request's checksum, when it has one, before its bytes reach the destination. Chunks
  // that nvCOMP decodes are always checked: it trusts its input, and a corrupt frame can read wild
  // addresses and kill the GPU context (compute-sanitizer shows it for a truncated zstd frame).
  bool verify_checksums = true;
  // wait_on_stream before the fence is reached, even before submit: the consumer stream waits for a
  // value the copy stream writes (cuStreamWaitValue32), "fire and forget" (seed 000, algorithm 2).
  // The price: until the fence is reached, no thread of the process may make a CUDA call that waits
  // for the device (a module load, as a first kernel launch may do, cuMemFree, a synchronous copy):
  // it would hold the driver while the GPU waits for the queue, which needs the driver to go on.
  // Off (the default), wait_on_stream waits on the host until the fence's event is recorded.
  // Needs decode_on_gpu = false (nvCOMP loads and launches kernels on the queue's own threads).
  bool stream_value_fences = false;
};

struct QueueStats {
  std::uint64_t requests_done = 0, requests_failed = 0, requests_cancelled = 0;
  std::uint64_t stored_bytes = 0;  // read from disk for done requests
  std::uint64_t raw_bytes = 0;     // delivered to destinations
  std::uint64_t backend_submits = 0;
  std::uint64_t backend_reads = 0;  // reads handed to backends: adjacent staged chunks travel as one
  std::uint64_t staging_waits = 0;  // dispatches that waited because all staging was in use
  std::uint64_t checksums_checked = 0;  // chunks whose checksum was computed (pinned files: once each)
  // (seconds since the queue was made, reads in flight) after every change: queue depth over time.
  std::vector<std::pair<double, std::uint32_t>> depth_samples;
};

class Queue {
 public:
  explicit Queue(QueueOptions options);
  // Cancels what was not dispatched, waits for reads and GPU work in flight, then frees staging.
  ~Queue() noexcept;
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  // Opens path with the queue's backend (and page-locks it with pin_files); throws UnavailableError,
  // FileNotFoundError, or CudaError when the driver refuses to page-lock the file.
  FileId add_file(const std::string& path);
  // Throws UsageError for a request that cannot be served (bad file id, sizes, a device destination
  // without a GPU, a stored size larger than staging).
  RequestId enqueue(Request request);
  FenceId enqueue_signal();
  void submit();
  // True when the request will never write its destination (it had not been read straight into it).
  bool cancel(RequestId id);
  std::size_t cancel_tag(std::uint64_t tag);

  [[nodiscard]] RequestStatus status(RequestId id) const;
  [[nodiscard]] bool is_signaled(FenceId fence) const;
  void wait(FenceId fence) const;
  // The fence's CUevent, waiting until it is recorded (every earlier request issued to the GPU).
  [[nodiscard]] std::uintptr_t fence_event(FenceId fence) const;
  // Makes consumer stream wait for the fence. By default the caller waits until the fence's event is
  // recorded (its requests submitted and their GPU work issued), then the stream waits on the event;
  // with stream_value_fences it returns at once, even before submit (see QueueOptions).
  void wait_on_stream(FenceId fence, std::uintptr_t stream) const;
  // Waits until every submitted request has finished.
  void drain() const;

  [[nodiscard]] QueueStats stats() const;
  [[nodiscard]] bool has_gpu() const noexcept;
  [[nodiscard]] std::uintptr_t copy_stream() const noexcept;  // the CUstream the GPU work runs on
  [[nodiscard]] std::string describe() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace headrace::queue
