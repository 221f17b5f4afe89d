// The engine's request queue, DirectStorage-style, for Linux and CUDA (seed 000, algorithms 1 and 2;
// seed 001):
//
//   enqueue(request)      a file range or container chunk -> a host or GPU destination, maybe compressed
//   enqueue_signal()      a fence: signalled once every request enqueued before it is finished
//   submit()              hands everything enqueued so far to the dispatcher, which batches it
//   cancel(id), cancel_tag(tag)   a cancelled request never writes its destination
//   status(id)            per-request state, error and timings
//
// It composes the layers below it, data flowing one way: queue/ keeps the requests, fences and
// cancellation (request_book.hpp); io/ reads (the read path per file, or cuFile into GPU memory);
// staging/ holds the ring, the page-locked files and the H2D copies; codec/ checks and decodes.
// Threads: a dispatcher (priority order, staging, batched backend submits) -> a finisher (checksums,
// CPU decoding, H2D copies and nvCOMP decoding issued on the queue's copy stream) -> a completer (GPU
// batches done). A fence's CUDA event is recorded on the copy stream once every earlier request's
// GPU work is issued, and the same moment writes the fence's value so that consumer streams can
// wait for it before it is reached (wait_on_stream: "fire and forget").
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "headrace/detail/enum_names.hpp"
#include "headrace/format/layout.hpp"
#include "headrace/io/backend.hpp"
#include "headrace/io/page_cache.hpp"
#include "headrace/queue/request.hpp"
#include "headrace/queue/request_book.hpp"
#include "headrace/staging/pinned_files.hpp"

namespace headrace::engine {

// The most raw bytes of a chunk the queue decodes on a GPU (nvCOMP's lz4 and zstd chunk limit).
inline constexpr std::uint64_t max_decode_chunk_bytes = std::uint64_t{16} << 20;

using queue::FenceId;
using queue::FileId;
using queue::Request;
using queue::RequestId;
using queue::RequestStatus;
using queue::RequestSummary;
using staging::PinPolicy;

// Staging a queue allocates unless told otherwise (seed 001: >= 256 MiB).
inline constexpr std::uint64_t default_staging_bytes = std::uint64_t{256} << 20;
// Finished requests whose status a queue keeps (older ones are retired: memory stays bounded).
inline constexpr std::uint64_t default_status_history = std::uint64_t{1} << 16;

struct QueueOptions {
  // nullopt: the read path, which asks the page cache per request (cache_policy): cached ranges are
  // read buffered by io.threads workers, the rest with O_DIRECT through io_uring. A host kind forces
  // that one backend for every request (the benchmark lab's methods). cufile: uncompressed device
  // destinations are read by cuFile straight into GPU memory (GDS, or its compatibility mode), by
  // io.threads workers per file; the rest take the read path.
  std::optional<io::BackendKind> backend;
  io::CachePolicy cache_policy = io::CachePolicy::auto_;
  Settings io = settings();  // knobs of the backends
  int device = -1;           // GPU ordinal for device destinations; -1: host destinations only
  std::uint64_t staging_bytes = default_staging_bytes;
  // Pinned staging in transparent huge pages page-locked by the driver, made in a fraction of
  // cuMemHostAlloc's time (the first read of a process waits for it), else cuMemHostAlloc (said in
  // describe()).
  bool staging_huge_pages = true;
  unsigned max_batch = 64;  // requests per backend submit (DMA from page-locked pages: flight bytes only)
  // Bytes of reads in flight straight into host destinations (those bypass staging).
  std::uint64_t max_direct_bytes = std::uint64_t{256} << 20;
  // Cache policy keep: how far the kernel reads a kept file ahead of its reads (io/read_ahead.hpp); 0: not.
  std::uint64_t read_ahead_bytes = std::uint64_t{512} << 20;
  unsigned decode_threads = 0;  // CPU decoding; 0: hardware concurrency
  bool decode_on_gpu = true;    // device destinations: nvCOMP; false: decode on the CPU, then H2D
  // Device destinations of a pinned file are copied by DMA straight from its page-cache pages, mapped
  // and page-locked when the file is added: no read, no CPU copy into staging. Page-locking faults in
  // every page and keeps them in RAM while the queue lives. auto pins only with the read path
  // (backend nullopt), only files already cached whole, within pin_budget_bytes. A file auto does not
  // pin is held instead, with cache_policy auto and no cuFile, when it fits the budget and half of the
  // memory available: what O_DIRECT reads of it for the GPU is kept in page-locked memory the queue owns,
  // so its later passes are DMA'd from there (staging/held_copy.hpp; not across processes).
  PinPolicy pin_files = PinPolicy::auto_;
  // Bytes of files auto may keep page-locked or held; 0: a quarter of the machine's memory, or of this
  // process's cgroup's memory.max where that is less (staging::default_pin_budget). Held copies take at
  // most the budget divided among the processes an MPI launcher started on the node (each has its own).
  std::uint64_t pin_budget_bytes = 0;
  // Checks each request's checksum, when it has one, before its bytes reach the destination. Chunks
  // that nvCOMP decodes are always checked: it trusts its input, and a corrupt frame can read wild
  // addresses and kill the GPU context (compute-sanitizer shows it for a truncated zstd frame).
  bool verify_checksums = true;
  // Where a plain chunk copied to a GPU is checked: on the GPU where it landed (true; codec/gpu/
  // chunk_hasher.hpp), the host waiting only for the sums, or on the host beside its DMA (false), whose
  // second pass over the bytes held 4 GPUs' streams to 0.81 of the DMA ceiling (docs/results.md).
  // Chunks of 240 bytes or less, at unaligned addresses, and those nvCOMP decodes are checked on the
  // host either way. Without the kernels, the host (said in describe()).
  bool check_on_gpu = true;
  // wait_on_stream before the fence is reached, even before submit: the consumer stream waits for a
  // value the copy stream writes (cuStreamWaitValue32), "fire and forget" (seed 000, algorithm 2).
  // The price: until the fence is reached, no thread of the process may make a CUDA call that waits
  // for the device (a module load, as a first kernel launch may do, cuMemFree, a synchronous copy):
  // it would hold the driver while the GPU waits for the queue, which needs the driver to go on.
  // Off (the default), wait_on_stream waits on the host until the fence's event is recorded.
  // Needs decode_on_gpu = false (nvCOMP loads and launches kernels on the queue's own threads).
  bool stream_value_fences = false;
  // Every fallback (O_DIRECT or io_uring unavailable, value fences refused) fails instead of being
  // taken and reported in describe().
  bool strict = false;
  // Finished requests whose status() stays readable; older ones are retired.
  std::uint64_t status_history = default_status_history;

  // Checks every value; throws UsageError naming the option and its valid range.
  void validate() const;
  // The backend the host read path is forced to: backend, unless it is nullopt or cufile.
  [[nodiscard]] std::optional<io::BackendKind> read_path_backend() const;
  // The staging ring of reads the page cache serves (docs/engine.md, lanes): a quarter of
  // staging_bytes, at least 64 KiB; a queue holds at most staging_bytes + this of staging.
  [[nodiscard]] std::uint64_t page_cache_staging_bytes() const noexcept {
    return format::layout::align_up(std::max<std::uint64_t>(staging_bytes / 4, std::uint64_t{64} << 10));
  }
  // backend == cufile: uncompressed device destinations are read by cuFile.
  [[nodiscard]] bool cufile() const noexcept { return backend == io::BackendKind::cufile; }
  // The documented defaults overridden by HEADRACE_<NAME> of every option but device (docs/settings.md;
  // decode_on_gpu is HEADRACE_DECODE_ON=gpu|cpu), validated; io = settings().
  [[nodiscard]] static QueueOptions from_environment();
};

// decode_on_gpu's names (HEADRACE_DECODE_ON, the bindings' decode_on).
inline constexpr detail::EnumNames<bool, 2> decode_on_names{{{true, "gpu"}, {false, "cpu"}}};
// check_on_gpu's names (HEADRACE_CHECK_ON, the bindings' check_on).
inline constexpr detail::EnumNames<bool, 2> check_on_names{{{true, "gpu"}, {false, "host"}}};

struct QueueStats {
  queue::RequestTotals requests;  // finished ones: counts by state, bytes (stored, raw, by source) of the done
  std::uint64_t backend_submits = 0;
  std::uint64_t backend_reads = 0;  // reads handed to backends: adjacent staged chunks travel as one
  // Times the dispatcher waited with requests pending: no lane could start one (its staging, or the
  // budget of reads straight into destinations, all in use).
  std::uint64_t staging_waits = 0;
  // Flights of the disk's lane and of the page cache's (pinned pages included); see docs/engine.md.
  std::uint64_t disk_lane_flights = 0, cache_lane_flights = 0;
  std::uint64_t checksums_checked = 0;  // chunks whose checksum was computed (pinned files: once each)
  // Queue depth without a history: the most reads in flight, and its mean over the time any were.
  std::uint32_t max_reads_in_flight = 0;
  double mean_reads_in_flight = 0, busy_seconds = 0;
  std::uint64_t retained_requests = 0;  // whose status is still kept (bounded by status_history)
};

// One flight of the queue (the requests the dispatcher sent to backends at once) and when each of its
// stages ended, in seconds since the queue was made. A stage the flight skipped (no GPU work: host
// destinations; nothing left after a failed read) holds the time of the stage before it.
struct FlightRecord {
  std::uint64_t number = 0;  // the queue's count of flights before it
  std::uint8_t lane = 0;     // 0: the disk's, 1: the page cache's (docs/engine.md, lanes)
  std::uint32_t requests = 0, reads = 0;
  std::uint64_t stored_bytes = 0;
  double dispatched_s = 0;  // its reads handed to the backends
  double taken_s = 0;       // its lane's finisher took it (after the flights before it)
  double landed_s = 0;      // every read of it landed
  double checked_s = 0;     // checksums checked, CPU decoding done
  double issued_s = 0;      // its H2D copies and GPU decoding issued on the copy stream
  double done_s = 0;        // its GPU work done (the completer saw its event), staging released
};
// How the queue would serve a request now, nothing read or queued (headrace info FILE): where its stored
// bytes would come from and how they would reach the destination, each a key and its words.
struct RouteExplanation {
  // pinned (DMA from the file's page-locked pages), held (DMA from the copy the engine kept of bytes it
  // read from the disk), page-cache (buffered), disk (O_DIRECT), kept (buffered from the disk, kept in the
  // cache), cufile, forced (a forced backend decides)
  std::string read;
  std::string read_detail;
  // copy (staging, then to the GPU), dma (from the page-locked pages to the GPU), gpu-decode (nvCOMP),
  // cpu-decode (then to the GPU), host (straight into host memory), host-decode, cufile, or unavailable
  std::string transfer;
  std::string transfer_detail;
  std::string why;  // the file's pin decision and cache choice, and any fallback
};

// Flights whose record a queue keeps (the newest): a timeline of one pass, bounded.
inline constexpr std::size_t flight_timeline_capacity = 4096;

// How one file is read where it differs from the queue's options (headrace.Queue.add_file sets it from the
// probe kept for the file's file system: docs/probe.md).
struct FileOptions {
  std::optional<io::CachePolicy> cache_policy;  // nullopt: the queue's
  std::string why;                              // why it differs: describe() and explain() say it
};

class Queue {
 public:
  explicit Queue(QueueOptions options);
  // Cancels what was not dispatched, waits for reads and GPU work in flight, then frees staging.
  ~Queue() noexcept;
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  // Opens path with the queue's read path (and page-locks it by pin_files), as file_options say where
  // they differ (the first add's stand while the file is open). Adding a file the queue holds already,
  // unchanged (same device, inode, size and modification time), returns its id again
  // at no cost (an auto pin is reconsidered: the file may have become cached). Throws
  // UnavailableError, FileNotFoundError, or CudaError when the driver refuses to page-lock the file.
  FileId add_file(const std::string& path, const FileOptions& file_options = {});
  // Closes the file (and unpins it) once the copies of requests past their read have ended (a
  // stream hands out a frame when its copies are issued); throws UsageError while a request still
  // waits for or does its read. Adding the path again opens it anew with a new id.
  void close_file(FileId file);
  // Closes every open version of path as close_file does (its pages unlocked, so that evicting it from
  // the page cache makes it cold); how many there were.
  std::size_t close_path(const std::string& path);
  // Throws UsageError for a request that cannot be served (bad file id, sizes, a device destination
  // without a GPU, a stored size larger than staging).
  RequestId enqueue(Request request);
  // How the request would be served if it were enqueued now (its file's page cache asked now); throws
  // UsageError for a bad file id. A GPU decoder the request needs is made, as enqueue makes it.
  [[nodiscard]] RouteExplanation explain(const Request& request) const;
  FenceId enqueue_signal();
  void submit();
  // True when the request will never write its destination (it had not been read straight into it).
  bool cancel(RequestId id);
  std::size_t cancel_tag(std::uint64_t tag);

  // Throws UsageError for an id never given or retired (status_history).
  [[nodiscard]] RequestStatus status(RequestId id) const;
  [[nodiscard]] RequestSummary summarize(std::span<const RequestId> ids) const;
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
  // The newest flights (up to flight_timeline_capacity), oldest first: where a pass spends its time.
  [[nodiscard]] std::vector<FlightRecord> flight_timeline() const;
  [[nodiscard]] bool has_gpu() const noexcept;
  [[nodiscard]] bool decodes_on_gpu() const noexcept;  // its options' decode_on_gpu
  [[nodiscard]] std::uint64_t status_history() const noexcept;  // its options' status_history
  // The CUstream the H2D copies run on; GPU decoding runs on two decode streams that the copy stream
  // waits for at each fence, so work ordered after a fence on it sees the fence's decoded bytes.
  [[nodiscard]] std::uintptr_t copy_stream() const noexcept;
  // Makes the queue's GPU context current on the calling thread (for events on consumer streams).
  void make_current() const;
  // The read path and every choice it made (backends per route, pinned files and why not, fences,
  // decoding, fallbacks taken).
  [[nodiscard]] std::string describe() const;
  // The fallbacks taken so far, each once (strict makes each an error instead).
  [[nodiscard]] std::vector<std::string> fallbacks() const;
  // Host and device bytes the queue holds (staging, device scratch, page-locked files).
  [[nodiscard]] std::uint64_t pinned_host_bytes() const;
  [[nodiscard]] std::uint64_t device_bytes() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace headrace::engine
