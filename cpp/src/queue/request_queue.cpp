#include "headrace/queue/request_queue.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <queue>
#include <thread>
#include <tuple>

#include "headrace/codec/chunk_checks.hpp"
#include "headrace/codec/gpu/decoder_pool.hpp"
#include "headrace/detail/environment.hpp"
#include "headrace/detail/seconds.hpp"
#include "headrace/detail/thread_pool.hpp"
#include "headrace/error.hpp"
#include "headrace/format/layout.hpp"
#include "headrace/gpu/cufile_reader.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/host_to_device_copies.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/pinned_file.hpp"
#include "headrace/gpu/stream.hpp"
#include "headrace/io/read_coalescing.hpp"
#include "headrace/io/read_path.hpp"
#include "headrace/staging/staging_ring.hpp"

namespace headrace::queue {

const char* to_string(RequestState state) noexcept {
  switch (state) {
    case RequestState::enqueued: return "enqueued";
    case RequestState::submitted: return "submitted";
    case RequestState::reading: return "reading";
    case RequestState::copying: return "copying";
    case RequestState::done: return "done";
    case RequestState::failed: return "failed";
    case RequestState::cancelled: return "cancelled";
  }
  return "?";
}

const char* to_string(ReadSource source) noexcept {
  switch (source) {
    case ReadSource::none: return "none";
    case ReadSource::page_cache: return "page-cache";
    case ReadSource::disk: return "disk";
    case ReadSource::buffered: return "buffered";
    case ReadSource::pinned: return "pinned";
    case ReadSource::cufile: return "cufile";
  }
  return "?";
}

const char* to_string(PinPolicy policy) noexcept {
  switch (policy) {
    case PinPolicy::off: return "off";
    case PinPolicy::on: return "on";
    case PinPolicy::auto_: return "auto";
  }
  return "?";
}

PinPolicy parse_pin_policy(const std::string& text) {
  if (text == "auto") return PinPolicy::auto_;
  if (text == "on" || text == "true" || text == "1") return PinPolicy::on;
  if (text == "off" || text == "false" || text == "0") return PinPolicy::off;
  throw UsageError("pin_files '" + text + "': expected auto|on|off");
}

void QueueOptions::validate() const {
  io::ReadPathOptions{backend, cache_policy, io, strict}.validate();
  HEADRACE_EXPECT(device >= -1, UsageError, "device must be a GPU ordinal >= 0, or -1 for host memory, got " + std::to_string(device));
  HEADRACE_EXPECT(staging_bytes >= (std::uint64_t{64} << 10) && staging_bytes <= (std::uint64_t{1} << 40), UsageError,
                  "staging_bytes must be in 64 KiB..1 TiB, got " + std::to_string(staging_bytes));
  HEADRACE_EXPECT(max_batch >= 1 && max_batch <= 65536, UsageError, "max_batch must be in 1..65536, got " + std::to_string(max_batch));
  HEADRACE_EXPECT(max_direct_bytes >= 4096, UsageError, "max_direct_bytes must be at least 4096, got " + std::to_string(max_direct_bytes));
  HEADRACE_EXPECT(decode_threads <= 1024, UsageError, "decode_threads must be in 0..1024 (0: one per core), got " + std::to_string(decode_threads));
  HEADRACE_EXPECT(status_history >= 1024, UsageError, "status_history must be at least 1024, got " + std::to_string(status_history));
}

QueueOptions QueueOptions::from_environment() {
  using detail::environment;
  using detail::parse_bool;
  using detail::parse_unsigned;
  QueueOptions o;
  if (auto v = environment("HEADRACE_BACKEND"); v && *v != "auto") o.backend = io::parse_backend_kind(*v);
  if (auto v = environment("HEADRACE_CACHE_POLICY")) o.cache_policy = io::parse_cache_policy(*v);
  if (auto v = environment("HEADRACE_PIN_FILES")) o.pin_files = parse_pin_policy(*v);
  if (auto v = environment("HEADRACE_PIN_BUDGET_BYTES")) o.pin_budget_bytes = parse_unsigned("HEADRACE_PIN_BUDGET_BYTES", *v);
  if (auto v = environment("HEADRACE_STAGING_BYTES")) o.staging_bytes = parse_unsigned("HEADRACE_STAGING_BYTES", *v);
  if (auto v = environment("HEADRACE_MAX_BATCH"))
    o.max_batch = static_cast<unsigned>(std::min<std::uint64_t>(parse_unsigned("HEADRACE_MAX_BATCH", *v), ~0u));
  if (auto v = environment("HEADRACE_DECODE_THREADS"))
    o.decode_threads = static_cast<unsigned>(std::min<std::uint64_t>(parse_unsigned("HEADRACE_DECODE_THREADS", *v), ~0u));
  if (auto v = environment("HEADRACE_VERIFY_CHECKSUMS")) o.verify_checksums = parse_bool("HEADRACE_VERIFY_CHECKSUMS", *v);
  if (auto v = environment("HEADRACE_STRICT")) o.strict = parse_bool("HEADRACE_STRICT", *v);
  if (auto v = environment("HEADRACE_STATUS_HISTORY")) o.status_history = parse_unsigned("HEADRACE_STATUS_HISTORY", *v);
  o.validate();
  return o;
}

namespace {

using Clock = detail::SteadyClock;
using format::CodecId;
using format::layout::align_up;

constexpr std::uint32_t fence_words = 1u << 16;  // device words for value fences, reused by generation
constexpr std::size_t retained_fences = 1024;     // fired fences kept before the oldest is retired
constexpr std::uint64_t max_decode_chunk_bytes = std::uint64_t{16} << 20;  // nvCOMP's lz4 and zstd chunk limit
constexpr std::uint64_t decoder_total_bytes = std::uint64_t{256} << 20;     // raw bytes one decoder call takes

using detail::seconds_between;

// How a dispatched request travels.
enum class Route : std::uint8_t {
  direct,         // read straight into its host destination
  host_decode,    // staging -> CPU decode -> host destination
  device_copy,    // staging -> H2D -> device destination
  device_decode,  // staging -> H2D into device scratch -> nvCOMP -> device destination
  device_cpu_decode,  // staging -> CPU decode into staging -> H2D -> device destination
  cufile_copy,    // cuFile reads straight into the device destination (compressed chunks take
                  // device_decode: their checksums must be checked on the host before nvCOMP)
};

struct Entry {
  Request request;
  RequestStatus status;
  Route route = Route::direct;
  bool pinned = false;  // a device route whose stored bytes are DMA'd from the file's pinned pages
  const gpu::PinnedFile* pinned_file = nullptr;  // then: the file's page-locked mapping (lives with the queue)
  bool cancel_requested = false;
  bool issued = false;  // will do no more GPU work (finished ones too)
  // Listed in unsubmitted_ or pending_: it cannot be retired before they drop it.
  bool listed = false;
  std::optional<staging::Region> region;
  Clock::time_point submitted_at, dispatched_at, read_at;
};

struct Fence {
  RequestId limit = 0;           // covers requests with id < limit
  std::uint64_t unfinished = 0;  // of those
  std::uint64_t unissued = 0;    // of those, not yet issued to the GPU stream (or finished)
  bool signaled = false;
  bool recorded = false;         // its event and value are on the copy stream
  std::unique_ptr<gpu::Event> event;
};

// A file the queue reads: its read path, and what else the queue holds for it.
struct OpenFile {
  std::string path;
  std::tuple<dev_t, ino_t, off_t, std::int64_t> identity;  // device, inode, size, mtime (ns)
  std::unique_ptr<io::FileReadPath> reads;
  std::unique_ptr<gpu::CufileReader> cufile;
  std::unique_ptr<gpu::PinnedFile> pinned;
  std::string pin_note;  // why it is (not) page-locked
  bool closed = false;   // close_file: its id is never read again
};

// One backend submission in flight: the finisher waits for it in dispatch order.
struct Flight {
  std::vector<RequestId> ids;
  std::vector<std::shared_ptr<io::ReadBatch>> batches;  // one per file touched, then cuFile's
  // Per id read by a backend: which read of the flight (over all batches, in order) carried it, and
  // where its bytes start in that read (adjacent staged chunks travel as one read).
  std::vector<std::pair<std::size_t, std::uint64_t>> carried_by;
  std::size_t pinned = 0;  // the last ids of the flight read nothing: their files are pinned
};

}  // namespace

class Queue::Impl {
 public:
  explicit Impl(QueueOptions options) : options_(validated(std::move(options))) {
    if (options_.pin_budget_bytes == 0) {
      const auto pages = static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES));
      options_.pin_budget_bytes = pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) / 4;
    }
    if (options_.device >= 0) {
      device_.emplace(options_.device);
      stream_.emplace();
      fence_memory_.emplace(std::size_t{fence_words} * sizeof(std::uint32_t));
      gpu::check(gpu::driver()->cuMemsetD8Async(fence_memory_->pointer(), 0, fence_memory_->size_bytes(), stream_->handle()),
                 "cuMemsetD8Async");
      stream_->synchronize();
      // CUDA 12+ drivers serve the v2 stream memory operations on every GPU (the v1 attribute that
      // used to say so is deprecated and reads 0); a refusal at run time falls back to events.
      HEADRACE_EXPECT(!options_.stream_value_fences || !options_.decode_on_gpu, UsageError,
                      "stream_value_fences needs decode_on_gpu = false: nvCOMP may load kernels while a consumer "
                      "stream waits on a fence, which deadlocks");
      memory_operations_ = options_.stream_value_fences;
      device_scratch_.emplace(align_up(options_.staging_bytes));
      decoders_.emplace(2, codec::gpu::BatchedDecoderLimits{options_.max_batch, max_decode_chunk_bytes, decoder_total_bytes});
    }
    if (options_.cufile) {
      HEADRACE_EXPECT(device_.has_value(), UsageError, "cuFile reads need a queue made for a GPU (device >= 0)");
      const std::string why = gpu::cufile_unavailable_reason();
      HEADRACE_EXPECT(why.empty(), UnavailableError, "cuFile unavailable: " + why);
      cufile_pool_.emplace(options_.io.threads);
    }
    HEADRACE_EXPECT(options_.pin_files != PinPolicy::on || device_.has_value(), UsageError,
                    "pin_files page-locks files for GPU copies: it needs a queue made for a GPU (device >= 0)");
    ring_.emplace(options_.staging_bytes, device_.has_value());
    dispatcher_ = std::thread([this] {
      use_context();  // the dispatcher's first staging region allocates the (pinned) ring
      dispatch_loop();
    });
    finisher_ = std::thread([this] {
      use_context();
      finish_loop();
    });
    if (device_) completer_ = std::thread([this] {
      use_context();
      complete_loop();
    });
  }

  ~Impl() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_.notify_all();
    ring_->close();
    dispatcher_.join();
    {
      std::lock_guard lock(mutex_);
      dispatcher_done_ = true;
    }
    flights_changed_.notify_all();
    finisher_.join();
    {
      std::lock_guard lock(mutex_);
      finisher_done_ = true;
    }
    completions_changed_.notify_all();
    if (completer_.joinable()) completer_.join();
    if (stream_) {
      use_context();
      stream_->synchronize();  // nothing on the GPU reads staging or fence memory now
    }
  }

  // Checked before any member is made from them (the checker's pool, staging).
  static QueueOptions validated(QueueOptions options) {
    options.validate();
    return options;
  }

  // A codec's GPU decoders are made the first time a request needs them, on the caller's thread before
  // the request is queued, never on the data path. Returns why nvCOMP cannot decode it, or "".
  std::string prepare_decoders(CodecId codec) {
    use_context();
    return decoders_->prepare(codec);
  }

  // CUDA driver calls need the GPU's context current on the calling thread (any thread may call in).
  void use_context() const {
    if (device_) device_->make_current();
  }

  FileId add_file(const std::string& path) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0) {
      const int error = errno;
      if (error == ENOENT) throw FileNotFoundError(path + ": no such file", error);
      HEADRACE_THROW_SYSTEM("stat", path);
    }
    const auto identity = std::tuple{info.st_dev, info.st_ino, info.st_size,
                                     std::int64_t{info.st_mtim.tv_sec} * 1000000000 + info.st_mtim.tv_nsec};
    std::vector<FileId> older;  // versions of the path replaced since (a writer renames a new file in)
    {
      std::unique_lock lock(mutex_);
      for (FileId id = 0; id < files_.size(); ++id) {
        if (files_[id].closed || files_[id].path != path) continue;
        if (files_[id].identity != identity) {
          older.push_back(id);
          continue;
        }
        lock.unlock();
        pin_if_asked(id);  // auto: cached whole since it was added?
        return id;
      }
    }
    for (const FileId id : older) {
      try {
        close_file(id);  // frees its pin budget; still read by a request: left open, reads go on
      } catch (const UsageError&) {
      }
    }
    OpenFile file;
    file.path = path;
    file.identity = identity;
    file.reads = std::make_unique<io::FileReadPath>(
        path, io::ReadPathOptions{options_.backend, options_.cache_policy, options_.io, options_.strict});
    if (!file.reads->fallback().empty()) {
      std::lock_guard lock(mutex_);
      note_fallback_locked(file.reads->fallback());
    }
    if (options_.cufile) file.cufile = std::make_unique<gpu::CufileReader>(path, device_->context());
    FileId id = 0;
    {
      std::lock_guard lock(mutex_);
      files_.push_back(std::move(file));
      id = static_cast<FileId>(files_.size() - 1);
    }
    pin_if_asked(id);
    return id;
  }

  // Unpins and closes a file no unfinished request reads; its id is never given again.
  void close_file(FileId id) {
    OpenFile closed;
    {
      std::lock_guard lock(mutex_);
      HEADRACE_EXPECT(id < files_.size() && !files_[id].closed, UsageError, "no open file " + std::to_string(id));
      advance_oldest_open_locked();
      for (RequestId r = oldest_open_; r < end_id(); ++r) {
        const Entry& entry = entry_ref(r);
        HEADRACE_EXPECT(entry.status.finished() || entry.request.file != id, UsageError,
                        files_[id].path + ": cannot be closed while request " + std::to_string(r) +
                            " reads it; cancel or wait for its requests first");
      }
      if (files_[id].pinned) pinned_bytes_ -= files_[id].pinned->size_bytes();
      closed = std::move(files_[id]);
      files_[id] = OpenFile{};
      files_[id].path = closed.path;
      files_[id].closed = true;
    }
    // Unpinning and closing take a while, so without the lock: nothing of the queue reads the file now.
    use_context();
  }

  void note_fallback_locked(const std::string& fallback) const {
    if (std::find(fallbacks_.begin(), fallbacks_.end(), fallback) == fallbacks_.end()) fallbacks_.push_back(fallback);
  }

  // Page-locks the file when pin_files asks for it: on, every file of a GPU queue; auto, only with the
  // read path, only a file the page cache holds whole (pinning faults in what is missing: a cold file
  // would be read page by page), only within pin_budget_bytes. Pinning runs without the lock (it
  // takes a while per GB), its budget reserved first.
  void pin_if_asked(FileId id) {
    std::string path;
    const io::PageCacheResidency* residency = nullptr;
    {
      std::lock_guard lock(mutex_);
      OpenFile& file = files_[id];
      if (file.pinned) return;
      path = file.path;
      residency = file.reads->residency();
      if (!device_ || options_.pin_files == PinPolicy::off) {
        file.pin_note = std::string("not page-locked (") + (device_ ? "pin_files off)" : "no GPU)");
        return;
      }
      if (options_.pin_files == PinPolicy::auto_ && options_.backend) {
        file.pin_note = std::string("not page-locked (backend ") + io::to_string(*options_.backend) + " forced)";
        return;
      }
    }
    std::uint64_t size = 0;
    if (options_.pin_files == PinPolicy::auto_) {
      size = residency->file_size();
      const bool cached = residency->fully_resident(0, size);
      std::lock_guard lock(mutex_);
      OpenFile& file = files_[id];
      if (!cached) {
        file.pin_note = "not page-locked (not cached whole when added)";
        return;
      }
      if (pinned_bytes_ + size > options_.pin_budget_bytes) {
        file.pin_note = "not page-locked (pin budget " + std::to_string(options_.pin_budget_bytes >> 20) + " MiB, " +
                        std::to_string(pinned_bytes_ >> 20) + " MiB in use)";
        return;
      }
      pinned_bytes_ += size;
    }
    std::unique_ptr<gpu::PinnedFile> pinned;
    std::string refusal;
    try {
      use_context();
      pinned = std::make_unique<gpu::PinnedFile>(path);
    } catch (const Error& error) {
      if (options_.pin_files == PinPolicy::on || options_.strict) throw;
      refusal = error.what();
    }
    std::lock_guard lock(mutex_);
    OpenFile& file = files_[id];
    if (!pinned) {
      pinned_bytes_ -= size;
      file.pin_note = "not page-locked (the driver refused: " + refusal + ")";
      note_fallback_locked(path + ": read instead of DMA from its pages: page-locking failed");
      return;
    }
    if (options_.pin_files == PinPolicy::on) pinned_bytes_ += pinned->size_bytes();
    file.pin_note = options_.pin_files == PinPolicy::on ? "page-locked (pin_files on)" : "page-locked (cached whole, auto)";
    file.pinned = std::move(pinned);
  }

  RequestId enqueue(Request request) {
    const Route route = route_of(request);
    const bool on_gpu = request.destination.kind == MemoryKind::device && device_;
    const std::string no_decoder = on_gpu && route == Route::device_decode ? prepare_decoders(request.codec) : "";
    std::lock_guard lock(mutex_);
    HEADRACE_EXPECT(request.file < files_.size(), UsageError, "request for file " + std::to_string(request.file) +
                                                                  ": only " + std::to_string(files_.size()) + " files added");
    const OpenFile& file = files_[request.file];
    HEADRACE_EXPECT(!file.closed, UsageError, file.path + ": file " + std::to_string(request.file) + " was closed; add it again");
    const std::string name = request.label.empty() ? file.path + ": offset " + std::to_string(request.offset) : request.label;
    HEADRACE_EXPECT(request.stored_size > 0 && request.raw_size > 0, UsageError, name + ": empty request");
    HEADRACE_EXPECT(request.codec != CodecId::none || request.stored_size == request.raw_size, UsageError,
                    name + ": an uncompressed request needs stored size == raw size");
    HEADRACE_EXPECT(request.destination.size_bytes == request.raw_size && request.destination.address != 0, UsageError,
                    name + ": destination of " + std::to_string(request.destination.size_bytes) + " bytes for " +
                        std::to_string(request.raw_size) + " raw bytes");
    const bool device = request.destination.kind == MemoryKind::device;
    HEADRACE_EXPECT(!device || device_.has_value(), UsageError,
                    name + ": a GPU destination needs a queue made for a GPU (device >= 0)");
    Entry entry;
    entry.route = route;
    entry.pinned = file.pinned != nullptr && request.destination.kind == MemoryKind::device;
    if (entry.pinned) entry.pinned_file = file.pinned.get();
    if (entry.route == Route::device_decode) {
      HEADRACE_EXPECT(request.checksum.has_value(), UsageError,
                      name + ": GPU decoding needs the chunk's checksum, checked on the host first (nvCOMP trusts its "
                             "input: a corrupt frame can fault the GPU); give a checksum or decode_on='cpu'");
      HEADRACE_EXPECT(no_decoder.empty(), UnavailableError,
                      name + ": no GPU decoder for " + format::to_string(request.codec) + ": " + no_decoder +
                          " (decode_on='cpu' decodes on the CPU)");
      HEADRACE_EXPECT(request.raw_size <= max_decode_chunk_bytes, UsageError,
                      name + ": a GPU-decoded chunk holds at most " + std::to_string(max_decode_chunk_bytes) +
                          " raw bytes, got " + std::to_string(request.raw_size));
    }
    HEADRACE_EXPECT(!needs_region(entry.route, entry.pinned) || region_bytes(request, entry.route) <= ring_->capacity_bytes(), UsageError,
                    name + ": needs " + std::to_string(region_bytes(request, entry.route)) +
                        " bytes of staging, more than the " + std::to_string(ring_->capacity_bytes()) + " there are");
    if (request.label.empty()) request.label = name;
    entry.request = std::move(request);
    entry.listed = true;
    ++awaiting_submit_;
    retire_locked();
    entries_.push_back(std::move(entry));
    const RequestId id = end_id();
    unsubmitted_.push_back(id - 1);
    return id - 1;
  }

  FenceId enqueue_signal() {
    std::unique_lock lock(mutex_);
    Fence fence;
    fence.limit = end_id();
    // A fence covers every request so far, and a finished request is issued: counts, not a scan, so a
    // long-lived queue (a frame loop's thousands of fences) pays nothing for its history.
    fence.unfinished = end_id() - finished_count_;
    fence.unissued = end_id() - issued_count_;
    fence.signaled = fence.unfinished == 0;
    use_context();
    if (device_) fence.event = std::make_unique<gpu::Event>();
    // Fences before the oldest open one have fired: only the last retained_fences are kept.
    while (fences_.size() >= retained_fences && first_fence_ < oldest_unsignaled_ && first_fence_ < oldest_unrecorded_) {
      fences_.pop_front();
      ++first_fence_;
    }
    fences_.push_back(std::move(fence));
    const FenceId id = first_fence_ + fences_.size() - 1;
    if (fence_ref(id).unissued == 0) record_fence(id);
    if (fence_ref(id).signaled) fences_changed_.notify_all();
    return id;
  }

  void submit() {
    {
      std::lock_guard lock(mutex_);
      const auto now = Clock::now();
      for (RequestId id : unsubmitted_) {
        Entry& entry = entry_ref(id);
        if (entry.status.state != RequestState::enqueued) {  // cancelled before submit
          entry.listed = false;
          continue;
        }
        entry.status.state = RequestState::submitted;
        entry.submitted_at = now;
        --awaiting_submit_;
        pending_.push(id);
      }
      unsubmitted_.clear();
    }
    work_.notify_all();
  }

  bool cancel(RequestId id) {
    std::unique_lock lock(mutex_);
    known(id);
    return cancel_locked(id);
  }

  // Visits the requests not finished yet: those before the oldest open one have all finished.
  std::size_t cancel_tag(std::uint64_t tag) {
    std::unique_lock lock(mutex_);
    std::size_t cancelled = 0;
    advance_oldest_open_locked();
    for (RequestId id = oldest_open_; id < end_id(); ++id) {
      const Entry& entry = entry_ref(id);
      if (entry.request.tag == tag && !entry.status.finished() && cancel_locked(id)) ++cancelled;
    }
    return cancelled;
  }

  RequestStatus status(RequestId id) const {
    std::lock_guard lock(mutex_);
    return known(id).status;
  }

  RequestSummary summarize(std::span<const RequestId> ids) const {
    std::lock_guard lock(mutex_);
    RequestSummary sum;
    for (const RequestId id : ids) {
      const Entry& entry = known(id);
      const RequestStatus& s = entry.status;
      ++sum.requests;
      sum.queue_wait_s += s.queue_wait_s;
      sum.io_s += s.io_s;
      sum.transfer_s += s.transfer_s;
      sum.h2d_s += s.h2d_s;
      sum.decode_s += s.decode_s;
      switch (s.state) {
        case RequestState::done:
          ++sum.done;
          sum.stored_bytes += entry.request.stored_size;
          sum.raw_bytes += entry.request.raw_size;
          break;
        case RequestState::failed:
        case RequestState::cancelled:
          ++(s.state == RequestState::failed ? sum.failed : sum.cancelled);
          if (sum.first_failure.empty()) sum.first_failure = s.message;
          break;
        default: ++sum.unfinished;
      }
      // Read (its bytes on their way, or in place) and not failed: where they came from is known.
      if (s.source != ReadSource::none && s.state != RequestState::failed && s.state != RequestState::cancelled)
        count_source(s.source, entry.request.stored_size, sum.bytes_from_cache, sum.bytes_from_disk, sum.bytes_pinned,
                     sum.bytes_other);
    }
    return sum;
  }

  // A retired fence had fired (fences retire in order, once signalled): nothing is left to wait for.
  bool is_signaled(FenceId fence) const {
    std::lock_guard lock(mutex_);
    return retired_fence(fence) || fence_ref(fence).signaled;
  }

  void wait(FenceId fence) const {
    std::unique_lock lock(mutex_);
    if (retired_fence(fence)) return;
    fence_ref(fence);
    fences_changed_.wait(lock, [&] { return retired_fence(fence) || fence_ref(fence).signaled; });
  }

  std::uintptr_t fence_event(FenceId fence) const {
    std::unique_lock lock(mutex_);
    HEADRACE_EXPECT(device_.has_value(), UsageError, "fence events need a queue made for a GPU");
    HEADRACE_EXPECT(!retired_fence(fence), UsageError,
                    "fence " + std::to_string(fence) + " fired long ago and was retired with its event; it needs no wait");
    fence_ref(fence);
    fences_changed_.wait(lock, [&] { return fence_ref(fence).recorded; });
    return reinterpret_cast<std::uintptr_t>(fence_ref(fence).event->handle());
  }

  void wait_on_stream(FenceId fence, std::uintptr_t stream) const {
    HEADRACE_EXPECT(device_.has_value(), UsageError, "waiting on a stream needs a queue made for a GPU");
    const auto consumer = reinterpret_cast<gpu::CUstream>(stream);
    use_context();
    {
      std::lock_guard lock(mutex_);
      if (retired_fence(fence)) return;  // its GPU work has completed
      fence_ref(fence);
    }
    if (memory_operations_) {
      const gpu::CUresult result = gpu::driver()->cuStreamWaitValue32(consumer, fence_word(fence), fence_generation(fence),
                                                                      gpu::stream_wait_value_geq);
      if (result == gpu::cuda_success) return;
      HEADRACE_EXPECT(!options_.strict, UnavailableError,
                      "cuStreamWaitValue32 refused (CUDA error " + std::to_string(result) +
                          "): value fences unavailable; strict forbids falling back to events");
      std::lock_guard lock(mutex_);
      memory_operations_ = false;  // refused here: wait for the event from now on, and say so
      note_fallback_locked("fences by events: cuStreamWaitValue32 refused (CUDA error " + std::to_string(result) + ")");
    }
    {
      std::lock_guard lock(mutex_);
      const Fence& f = fence_ref(fence);
      // Without memory operations the host must wait for the event's record: never before a submit.
      const bool unsubmitted = std::any_of(unsubmitted_.begin(), unsubmitted_.end(), [&](RequestId id) {
        return id < f.limit && entry_ref(id).status.state == RequestState::enqueued;
      });
      HEADRACE_EXPECT(f.recorded || !unsubmitted, UsageError,
                      "wait_on_stream before submit() needs a queue made with stream_value_fences: submit first");
    }
    gpu::check(gpu::driver()->cuStreamWaitEvent(consumer, reinterpret_cast<gpu::CUevent>(fence_event(fence)), 0),
               "cuStreamWaitEvent");
  }

  // Every request is finished or still waits for submit(): counts, not a scan of the history.
  void drain() const {
    std::unique_lock lock(mutex_);
    fences_changed_.wait(lock, [&] { return end_id() - finished_count_ == awaiting_submit_; });
  }

  QueueStats stats() const {
    std::lock_guard lock(mutex_);
    QueueStats result = stats_;
    result.staging_waits = ring_->waits();
    result.checksums_checked = checker_.checksums_checked();
    result.mean_reads_in_flight = stats_.busy_seconds > 0 ? depth_seconds_ / stats_.busy_seconds : 0;
    result.retained_requests = entries_.size();
    return result;
  }

  bool has_gpu() const noexcept { return device_.has_value(); }
  std::uintptr_t copy_stream() const noexcept { return stream_ ? reinterpret_cast<std::uintptr_t>(stream_->handle()) : 0; }

  std::uint64_t pinned_host_bytes() const {
    std::lock_guard lock(mutex_);
    return (ring_->pinned() ? ring_->allocated_bytes() : 0) + pinned_bytes_;
  }
  std::uint64_t device_bytes() const {
    return (device_scratch_ ? device_scratch_->size_bytes() : 0) + (fence_memory_ ? fence_memory_->size_bytes() : 0);
  }

  std::string describe() const {
    std::lock_guard lock(mutex_);
    std::string text = "queue read-path=";
    if (options_.backend) {
      text += std::string(io::to_string(*options_.backend)) + " (forced)";
    } else {
      text += std::string("auto cache=") + io::to_string(options_.cache_policy) +
              " (cached: posix threads=" + std::to_string(options_.io.threads) + ", uncached: " +
              (options_.cache_policy == io::CachePolicy::use ? "posix" : "uring O_DIRECT qd=" + std::to_string(options_.io.queue_depth)) + ")";
    }
    text += " staging=" + std::to_string(options_.staging_bytes >> 20) + "MiB" + (ring_->pinned() ? " pinned" : " pageable") +
            " batch=" + std::to_string(options_.max_batch);
    if (device_) {
      text += " gpu=" + std::to_string(options_.device);
      if (options_.cufile) {
        const auto driver = gpu::CufileDriver::shared();
        text += std::string(" cufile=") + shim::to_string(driver->mode()) + " (" + driver->mode_reason() + ")";
      }
      text += std::string(" pin-files=") + to_string(options_.pin_files) + " (budget " +
              std::to_string(options_.pin_budget_bytes >> 20) + " MiB, " + std::to_string(pinned_bytes_ >> 20) + " MiB locked)";
      text += std::string(" fences=") + (memory_operations_ ? "stream-value" : "event");
      text += std::string(" decode=") + (options_.decode_on_gpu ? "gpu (nvCOMP)" : "cpu");
    } else {
      text += " destinations=host";
    }
    if (!options_.verify_checksums) text += " checksums=off";
    // Per file, at most a few: a long series of files is summed up.
    constexpr std::size_t listed_files = 4;
    for (std::size_t f = 0; f < files_.size() && f < listed_files; ++f) {
      const OpenFile& file = files_[f];
      if (file.closed) continue;
      text += "; " + file.path + ": " + file.pin_note;
      if (file.pinned) text += " in " + std::to_string(file.pinned->register_seconds()) + " s";
    }
    if (files_.size() > listed_files) text += "; and " + std::to_string(files_.size() - listed_files) + " more files";
    for (const std::string& fallback : fallbacks_) text += "; fallback: " + fallback;
    return text;
  }

  std::vector<std::string> fallbacks() const {
    std::lock_guard lock(mutex_);
    return fallbacks_;
  }

 private:
  Route route_of(const Request& r) const {
    const bool compressed = r.codec != CodecId::none;
    if (r.destination.kind == MemoryKind::host) return compressed ? Route::host_decode : Route::direct;
    if (options_.cufile && !compressed) return Route::cufile_copy;
    if (!compressed) return Route::device_copy;
    return options_.decode_on_gpu ? Route::device_decode : Route::device_cpu_decode;
  }

  // Direct and cuFile copies read straight into their destination; the rest go through a region of the
  // ring (GPU decoding also uses the region's twin in device scratch).
  static bool uses_staging(Route route) { return route != Route::direct && route != Route::cufile_copy; }

  static std::uint64_t region_bytes(const Request& r, Route route) {
    // The CPU-decode-then-copy route keeps the raw bytes in staging after the stored ones.
    return align_up(r.stored_size) + (route == Route::device_cpu_decode ? r.raw_size : 0);
  }

  static bool is_cufile(Route route) { return route == Route::cufile_copy; }

  // A pinned copy needs no staging; a pinned decode still takes a region for its scratch twin.
  static bool needs_region(Route route, bool pinned) { return uses_staging(route) && !(pinned && route == Route::device_copy); }

  // Where a request's stored bytes are once read (or, pinned, where they always were).
  static const std::byte* stored_bytes(const Entry& entry) {
    const Request& r = entry.request;
    if (entry.pinned) return entry.pinned_file->data() + r.offset;
    if (entry.route == Route::direct) return reinterpret_cast<const std::byte*>(r.destination.address);
    return entry.region->data;
  }

  // The end of the host buffer a request's stored bytes lie in: its page-locked file, or staging.
  const std::byte* source_end(const Entry& entry) const {
    if (entry.pinned) return entry.pinned_file->data() + entry.pinned_file->size_bytes();
    return entry.region->data - entry.region->offset + ring_->capacity_bytes();
  }

  struct CufileRead {
    gpu::CufileReader* reader;
    std::uint64_t offset, size;
    gpu::CUdeviceptr destination;
  };

  // cuFile reads are synchronous: the pool's workers run them and complete a batch like a backend's.
  std::shared_ptr<io::ReadBatch> submit_cufile(std::vector<CufileRead> reads) {
    auto batch = std::make_shared<io::ReadBatch>(reads.size());
    for (std::size_t i = 0; i < reads.size(); ++i) {
      cufile_pool_->submit([this, batch, read = reads[i], i](unsigned) {
        io::ReadStatus status;
        try {
          status.bytes_read = read.reader->read(read.destination, read.size, read.offset);
        } catch (const std::exception& error) {
          status.error_number = EIO;
          status.message = error.what();
        }
        batch->complete(i, std::move(status));
      });
    }
    return batch;
  }

  // ---- the history: ids stay valid, memory stays bounded ----
  RequestId end_id() const { return first_id_ + entries_.size(); }
  Entry& entry_ref(RequestId id) { return entries_[id - first_id_]; }
  const Entry& entry_ref(RequestId id) const { return entries_[id - first_id_]; }
  // The entry of a request a caller names; UsageError for one never given or retired.
  const Entry& known(RequestId id) const {
    HEADRACE_EXPECT(id < end_id(), UsageError, "no request " + std::to_string(id));
    HEADRACE_EXPECT(id >= first_id_, UsageError,
                    "request " + std::to_string(id) + " was retired: the queue keeps the status of its last " +
                        std::to_string(options_.status_history) + " requests (status_history)");
    return entry_ref(id);
  }

  // With the lock held: drops the oldest finished requests beyond status_history. Only entries no list
  // names, whose region is back and whose GPU work is over, at the front: every later one keeps its id.
  void retire_locked() {
    while (entries_.size() >= options_.status_history) {
      const Entry& front = entries_.front();
      if (!front.status.finished() || front.listed || !front.issued || front.region) return;
      entries_.pop_front();
      ++first_id_;
    }
  }

  void advance_oldest_open_locked() {
    oldest_open_ = std::max(oldest_open_, first_id_);
    while (oldest_open_ < end_id() && entry_ref(oldest_open_).status.finished()) ++oldest_open_;
  }

  bool retired_fence(FenceId fence) const {
    HEADRACE_EXPECT(fence < first_fence_ + fences_.size(), UsageError, "no fence " + std::to_string(fence));
    return fence < first_fence_;
  }
  Fence& fence_ref(FenceId fence) { return fences_[fence - first_fence_]; }
  const Fence& fence_ref(FenceId fence) const {
    HEADRACE_EXPECT(fence >= first_fence_ && fence < first_fence_ + fences_.size(), UsageError, "no fence " + std::to_string(fence));
    return fences_[fence - first_fence_];
  }

  static void count_source(ReadSource source, std::uint64_t bytes, std::uint64_t& cache, std::uint64_t& disk,
                           std::uint64_t& pinned, std::uint64_t& other) {
    switch (source) {
      case ReadSource::page_cache: cache += bytes; break;
      case ReadSource::pinned: cache += bytes; pinned += bytes; break;
      case ReadSource::disk: disk += bytes; break;
      default: other += bytes;
    }
  }

  gpu::CUdeviceptr fence_word(FenceId fence) const {
    return fence_memory_->pointer() + (fence % fence_words) * sizeof(std::uint32_t);
  }
  static std::uint32_t fence_generation(FenceId fence) { return static_cast<std::uint32_t>(fence / fence_words + 1); }

  // With the lock held: every earlier request of this fence is issued (or finished).
  void record_fence(FenceId id) {
    Fence& fence = fence_ref(id);
    if (fence.recorded) return;
    if (device_) {
      use_context();
      fence.event->record(stream_->handle());
      gpu::check(gpu::driver()->cuStreamWriteValue32(stream_->handle(), fence_word(id), fence_generation(id),
                                                     gpu::stream_write_value_default),
                 "cuStreamWriteValue32");
    }
    fence.recorded = true;
    fences_changed_.notify_all();
  }

  // With the lock held.
  bool cancel_locked(RequestId id) {
    Entry& entry = entry_ref(id);
    switch (entry.status.state) {
      case RequestState::enqueued:
        --awaiting_submit_;
        [[fallthrough]];
      case RequestState::submitted:  // the dispatcher drops it without reading it
        entry.cancel_requested = true;
        finish_locked(id, RequestState::cancelled, "cancelled before it was read");
        return true;
      case RequestState::reading:
      case RequestState::copying:
        if (!uses_staging(entry.route) || entry.status.state == RequestState::copying) return false;
        entry.cancel_requested = true;  // read into staging: the finisher drops it
        return true;
      case RequestState::done:
      case RequestState::failed:
        return false;
      case RequestState::cancelled:
        return true;
    }
    return false;
  }

  // With the lock held: the request will do no more GPU work.
  // Fences cover growing prefixes of the requests, so they are recorded and signaled in order: the loops
  // start at the oldest one still open.
  void mark_issued_locked(RequestId id) {
    Entry& entry = entry_ref(id);
    if (entry.issued) return;
    entry.issued = true;
    ++issued_count_;
    const FenceId end = first_fence_ + fences_.size();
    while (oldest_unrecorded_ < end && fence_ref(oldest_unrecorded_).recorded) ++oldest_unrecorded_;
    for (FenceId f = oldest_unrecorded_; f < end; ++f) {
      Fence& fence = fence_ref(f);
      if (fence.recorded || id >= fence.limit) continue;
      if (--fence.unissued == 0) record_fence(f);
    }
  }

  // With the lock held.
  void finish_locked(RequestId id, RequestState state, std::string message) {
    Entry& entry = entry_ref(id);
    if (entry.status.finished()) return;
    entry.status.state = state;
    entry.status.message = std::move(message);
    entry.status.completion_index = completed_++;
    ++finished_count_;
    const auto now = Clock::now();
    if (state == RequestState::done) {
      entry.status.transfer_s = seconds_between(entry.read_at, now);
      ++stats_.requests_done;
      stats_.stored_bytes += entry.request.stored_size;
      stats_.raw_bytes += entry.request.raw_size;
      std::uint64_t other = 0;
      count_source(entry.status.source, entry.request.stored_size, stats_.bytes_from_cache, stats_.bytes_from_disk,
                   stats_.bytes_pinned, other);
    } else if (state == RequestState::failed) {
      ++stats_.requests_failed;
    } else {
      ++stats_.requests_cancelled;
    }
    mark_issued_locked(id);
    const FenceId end = first_fence_ + fences_.size();
    while (oldest_unsignaled_ < end && fence_ref(oldest_unsignaled_).signaled) ++oldest_unsignaled_;
    for (FenceId f = oldest_unsignaled_; f < end; ++f) {
      Fence& fence = fence_ref(f);
      if (fence.signaled || id >= fence.limit) continue;
      if (--fence.unfinished == 0) fence.signaled = true;
    }
    fences_changed_.notify_all();
  }

  // With the lock held, before reads_in_flight_ changes: the depth since the last change, integrated.
  void account_depth_locked() {
    const auto now = Clock::now();
    if (reads_in_flight_ > 0) {
      const double seconds = seconds_between(depth_changed_at_, now);
      depth_seconds_ += seconds * reads_in_flight_;
      stats_.busy_seconds += seconds;
    }
    depth_changed_at_ = now;
  }

  // ---- dispatcher: priority order, staging, batched backend submits ----
  struct PendingOrder {
    const Impl* queue;
    bool operator()(RequestId a, RequestId b) const {  // true: a after b
      const int pa = queue->entry_ref(a).request.priority, pb = queue->entry_ref(b).request.priority;
      return pa != pb ? pa < pb : a > b;
    }
  };

  void dispatch_loop() {
    std::unique_lock lock(mutex_);
    while (true) {
      work_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping, and nothing left
      Flight flight;
      // Reads by (file, route): route 0 the file's buffered backend (or its forced one), 1 O_DIRECT.
      const std::size_t lists = files_.size() * 2;
      std::vector<std::vector<io::ReadRequest>> reads(lists);
      std::vector<std::vector<bool>> staged(lists);  // its memory gap is staging padding
      std::vector<std::vector<RequestId>> read_ids(lists);
      std::vector<CufileRead> cufile_reads;
      std::vector<RequestId> cufile_ids, pinned_ids;
      // A flight is finished as a whole (its reads, then their checks and copies), so one flight
      // must not hold all of staging, or the disk would idle while it is checked: at most a quarter.
      const std::uint64_t flight_limit = std::max<std::uint64_t>(ring_->capacity_bytes() / 4, 1);
      std::uint64_t flight_bytes = 0;
      while (!pending_.empty() && flight.ids.size() < options_.max_batch) {
        const RequestId id = pending_.top();
        Entry& entry = entry_ref(id);
        if (entry.status.finished() || stopping_) {
          pending_.pop();
          entry.listed = false;
          finish_locked(id, RequestState::cancelled, "cancelled: the queue was destroyed");
          continue;
        }
        const std::uint64_t entry_bytes = entry.request.stored_size;
        if (!flight.ids.empty() && flight_bytes + entry_bytes > flight_limit) break;
        void* target = nullptr;
        if (entry.pinned && !needs_region(entry.route, true)) {
          // nothing to reserve: the DMA reads the file's pages
        } else if (!uses_staging(entry.route)) {
          if (direct_bytes_ + entry.request.stored_size > options_.max_direct_bytes && direct_bytes_ > 0) {
            if (!flight.ids.empty()) break;  // send what we have; the finisher frees room
            flights_changed_.wait(lock, [&] { return stopping_ || direct_bytes_ == 0; });
            continue;
          }
          direct_bytes_ += entry.request.stored_size;
          target = reinterpret_cast<void*>(entry.request.destination.address);  // a device address for cuFile
        } else {
          const std::uint64_t bytes = region_bytes(entry.request, entry.route);
          entry.region = ring_->try_acquire(bytes);
          if (!entry.region) {
            if (!flight.ids.empty()) break;  // send the batch first: its completion frees staging
            lock.unlock();
            auto region = ring_->acquire(bytes);  // counts a staging wait
            lock.lock();
            if (!region) continue;  // closed: the loop cancels it
            entry.region = region;
          }
          target = entry.region->data;
        }
        pending_.pop();
        entry.listed = false;
        flight_bytes += entry_bytes;
        entry.status.state = RequestState::reading;
        entry.dispatched_at = Clock::now();
        entry.status.queue_wait_s = seconds_between(entry.submitted_at, entry.dispatched_at);
        const Request& r = entry.request;
        if (entry.pinned) {
          entry.status.source = ReadSource::pinned;
          pinned_ids.push_back(id);
        } else if (is_cufile(entry.route)) {
          entry.status.source = ReadSource::cufile;
          cufile_reads.push_back({files_[r.file].cufile.get(), r.offset, r.stored_size,
                                  static_cast<gpu::CUdeviceptr>(r.destination.address)});
          cufile_ids.push_back(id);
        } else {
          const io::ReadRoute route = files_[r.file].reads->route(r.offset, r.stored_size);
          entry.status.source = source_of(route);
          const std::size_t list = std::size_t{r.file} * 2 + (route == io::ReadRoute::direct ? 1 : 0);
          reads[list].push_back({r.offset, r.stored_size, target});
          staged[list].push_back(entry.region.has_value());
          read_ids[list].push_back(id);
        }
        flight.ids.push_back(id);
        account_depth_locked();
        ++reads_in_flight_;
      }
      if (flight.ids.empty()) continue;
      stats_.max_reads_in_flight = std::max(stats_.max_reads_in_flight, reads_in_flight_);
      ++stats_.backend_submits;
      std::vector<std::pair<io::Backend*, std::vector<io::ReadRequest>>> batches;
      // Order of ids in the flight = order of the reads the finisher gets back: batch by batch.
      flight.ids.clear();
      std::size_t reads_before = 0;
      for (std::size_t list = 0; list < lists; ++list) {
        if (reads[list].empty()) continue;
        io::Backend* backend = &files_[list / 2].reads->backend(list % 2 == 1 ? io::ReadRoute::direct : io::ReadRoute::cached);
        auto joined = io::coalesce_reads(reads[list], staged[list], {.file_size = backend->file_size()});
        for (auto [read, offset] : joined.carried_by) flight.carried_by.emplace_back(reads_before + read, offset);
        reads_before += joined.reads.size();
        stats_.backend_reads += joined.reads.size();
        flight.ids.insert(flight.ids.end(), read_ids[list].begin(), read_ids[list].end());
        batches.emplace_back(backend, std::move(joined.reads));
      }
      for (std::size_t i = 0; i < cufile_ids.size(); ++i) flight.carried_by.emplace_back(reads_before + i, 0);
      stats_.backend_reads += cufile_ids.size();
      flight.ids.insert(flight.ids.end(), cufile_ids.begin(), cufile_ids.end());
      flight.ids.insert(flight.ids.end(), pinned_ids.begin(), pinned_ids.end());
      flight.pinned = pinned_ids.size();
      lock.unlock();
      for (auto& [backend, requests] : batches) flight.batches.push_back(backend->submit(std::move(requests)));
      if (!cufile_reads.empty()) flight.batches.push_back(submit_cufile(std::move(cufile_reads)));
      lock.lock();
      flights_.push_back(std::move(flight));
      flights_changed_.notify_all();
    }
  }

  static ReadSource source_of(io::ReadRoute route) {
    switch (route) {
      case io::ReadRoute::cached: return ReadSource::page_cache;
      case io::ReadRoute::direct:
      case io::ReadRoute::forced_direct: return ReadSource::disk;
      case io::ReadRoute::forced_buffered: return ReadSource::buffered;
    }
    return ReadSource::none;
  }

  // ---- finisher: checks, decode, H2D, completion ----
  void finish_loop() {
    while (true) {
      Flight flight;
      {
        std::unique_lock lock(mutex_);
        flights_changed_.wait(lock, [&] { return !flights_.empty() || dispatcher_done_; });
        if (flights_.empty()) return;
        flight = std::move(flights_.front());
        flights_.pop_front();
      }
      finish_flight(flight);
    }
  }

  void finish_flight(Flight& flight) {
    // Each request's read status in flight order: a joined read's outcome is each member's.
    std::vector<io::ReadStatus> carried;
    for (auto& batch : flight.batches) {
      const auto& statuses = batch->statuses();  // waits: no read into our memory outlives this
      carried.insert(carried.end(), statuses.begin(), statuses.end());
    }
    std::vector<io::ReadStatus> reads;
    reads.reserve(flight.ids.size());
    {
      std::lock_guard lock(mutex_);
      for (std::size_t i = 0; i < flight.carried_by.size(); ++i) {
        const auto [read, offset] = flight.carried_by[i];
        io::ReadStatus status = carried[read];
        if (status.ok())
          status.bytes_read = std::min(entry_ref(flight.ids[i]).request.stored_size, status.bytes_read > offset ? status.bytes_read - offset : 0);
        reads.push_back(std::move(status));
      }
      for (std::size_t i = flight.ids.size() - flight.pinned; i < flight.ids.size(); ++i) {
        const Entry& entry = entry_ref(flight.ids[i]);
        const Request& r = entry.request;
        io::ReadStatus status;
        const std::uint64_t size = entry.pinned_file->size_bytes();
        status.bytes_read = r.offset < size ? std::min(r.stored_size, size - r.offset) : 0;  // a short "read" fails below
        reads.push_back(std::move(status));
      }
    }
    const auto read_at = Clock::now();
    std::vector<RequestId> host_work, device_work;
    {
      std::lock_guard lock(mutex_);
      account_depth_locked();
      for (std::size_t i = 0; i < flight.ids.size(); ++i) {
        Entry& entry = entry_ref(flight.ids[i]);
        --reads_in_flight_;
        if (!uses_staging(entry.route)) direct_bytes_ -= entry.request.stored_size;
        entry.read_at = read_at;
        entry.status.io_s = seconds_between(entry.dispatched_at, read_at);
        const bool short_read = reads[i].ok() && reads[i].bytes_read < entry.request.stored_size;
        if (!reads[i].ok() || short_read) {
          release_region_locked(entry);
          finish_locked(flight.ids[i], RequestState::failed,
                        reads[i].ok() ? entry.request.label + ": expected " + std::to_string(entry.request.stored_size) +
                                            " bytes, read " + std::to_string(reads[i].bytes_read)
                                      : reads[i].message);
        } else if (entry.cancel_requested && uses_staging(entry.route)) {
          release_region_locked(entry);
          finish_locked(flight.ids[i], RequestState::cancelled, "cancelled after its read; destination untouched");
        } else if (entry.route == Route::cufile_copy) {
          finish_locked(flight.ids[i], RequestState::done, "");  // cuFile put the bytes in place
        } else if (entry.route == Route::direct || entry.route == Route::host_decode) {
          host_work.push_back(flight.ids[i]);
        } else {
          device_work.push_back(flight.ids[i]);
        }
      }
      flights_changed_.notify_all();  // direct bytes freed
    }
    finish_on_host(host_work);
    finish_on_device(device_work);
  }

  // Checksums and CPU decoding of requests whose bytes pass the host (codec/chunk_checks.hpp). Returns
  // per request an error message (empty when fine). Chunks nvCOMP decodes are always checked: it trusts
  // its input, and a corrupt frame can read wild addresses and kill the GPU context.
  std::vector<std::string> check_and_decode(const std::vector<RequestId>& ids, std::vector<double>& decode_seconds) {
    // A deque's elements stay put while enqueue appends, but its index of blocks may move: look the
    // entries up under the lock, then work on them without it (nobody else writes what is read here).
    std::vector<codec::ChunkCheck> chunks;
    chunks.reserve(ids.size());
    {
      std::lock_guard lock(mutex_);
      for (const RequestId id : ids) {
        const Entry& entry = entry_ref(id);
        const Request& r = entry.request;
        codec::ChunkCheck chunk;
        if (!is_cufile(entry.route)) {  // uncompressed bytes cuFile put on the GPU are not checked
          chunk.stored = stored_bytes(entry);
          chunk.stored_size = r.stored_size;
          chunk.checksum = r.checksum;
          chunk.verify = options_.verify_checksums || entry.route == Route::device_decode;
          chunk.codec = r.codec;
          if (entry.route == Route::host_decode) chunk.decode_into = reinterpret_cast<std::byte*>(r.destination.address);
          if (entry.route == Route::device_cpu_decode) chunk.decode_into = entry.region->data + align_up(r.stored_size);
          chunk.raw_size = r.raw_size;
          chunk.label = r.label;
          chunk.file_offset = r.offset;
          if (entry.pinned) chunk.pinned_at = std::pair<std::uint64_t, std::uint64_t>{r.file, r.offset};
        }
        chunks.push_back(chunk);
      }
    }
    const auto results = checker_.run(chunks);
    std::vector<std::string> errors(ids.size());
    decode_seconds.assign(ids.size(), 0.0);
    for (std::size_t i = 0; i < ids.size(); ++i) {
      errors[i] = results[i].error;
      decode_seconds[i] = results[i].decode_seconds;
    }
    return errors;
  }

  void finish_on_host(const std::vector<RequestId>& ids) {
    if (ids.empty()) return;
    std::vector<double> decode_seconds;
    const std::vector<std::string> errors = check_and_decode(ids, decode_seconds);
    {
      std::lock_guard lock(mutex_);
      for (std::size_t i = 0; i < ids.size(); ++i) {
        entry_ref(ids[i]).status.decode_s = decode_seconds[i];
        release_region_locked(entry_ref(ids[i]));
        finish_locked(ids[i], errors[i].empty() ? RequestState::done : RequestState::failed, errors[i]);
      }
    }
  }

  void finish_on_device(const std::vector<RequestId>& ids) {
    if (ids.empty()) return;
    std::vector<double> decode_seconds;
    const std::vector<std::string> errors = check_and_decode(ids, decode_seconds);
    std::vector<RequestId> issued;
    auto completion = std::make_unique<Completion>();
    // Compressed chunks by codec: (indices into completion->ids, items, labels).
    std::map<CodecId, DecodeGroup> groups;
    gpu::HostToDeviceCopies copies;
    const auto stream = stream_->handle();
    {
      std::lock_guard lock(mutex_);
      completion->started.record(stream);
      for (std::size_t i = 0; i < ids.size(); ++i) {
        Entry& entry = entry_ref(ids[i]);
        entry.status.decode_s = decode_seconds[i];
        if (!errors[i].empty()) {
          release_region_locked(entry);
          finish_locked(ids[i], RequestState::failed, errors[i]);
          continue;
        }
        const Request& r = entry.request;
        const auto destination = static_cast<gpu::CUdeviceptr>(r.destination.address);
        if (entry.route == Route::device_copy) {
          copies.add(destination, stored_bytes(entry), r.raw_size, source_end(entry));
        } else if (entry.route == Route::device_cpu_decode) {
          copies.add(destination, entry.region->data + align_up(r.stored_size), r.raw_size, source_end(entry));
        } else {
          const gpu::CUdeviceptr scratch = device_scratch_->pointer() + entry.region->offset;
          // A staged chunk is copied with its region's padding, so that neighbours in staging,
          // neighbours in the scratch twin too, travel as one copy.
          copies.add(scratch, stored_bytes(entry), entry.pinned ? r.stored_size : align_up(r.stored_size), source_end(entry));
          DecodeGroup& group = groups[r.codec];
          group.indices.push_back(completion->ids.size());
          group.items.push_back({scratch, r.stored_size, destination, r.raw_size});
          group.labels.push_back(r.label);
        }
        entry.status.state = RequestState::copying;
        issued.push_back(ids[i]);
        completion->ids.push_back(ids[i]);
        completion->copied_bytes.push_back(entry.route == Route::device_decode ? r.stored_size : r.raw_size);
        completion->decoded_bytes.push_back(entry.route == Route::device_decode ? r.raw_size : 0);
      }
    }
    if (issued.empty()) return;
    std::string failure;
    try {
      copies.issue(stream);
      completion->copied.record(stream);
      // Decoders were made with the queue: the data path only waits for an idle one, it allocates nothing.
      for (auto& [codec, group] : groups) {
        for (std::size_t first = 0; first < group.items.size();) {
          DecodeGroup part;
          std::uint64_t total = 0;
          while (first < group.items.size() && part.items.size() < decoders_->limits().max_chunks &&
                 total + group.items[first].raw_size <= decoders_->limits().max_total_raw_bytes) {
            total += group.items[first].raw_size;
            part.indices.push_back(group.indices[first]);
            part.items.push_back(group.items[first]);
            part.labels.push_back(group.labels[first]);
            ++first;
          }
          part.decoder = decoders_->take(codec);
          part.decoder->decoder.decode_async(part.items, stream);
          completion->groups.push_back(std::move(part));
        }
      }
      completion->event.record(stream);
    } catch (const std::exception& error) {
      failure = error.what();
    }
    std::lock_guard lock(mutex_);
    if (!failure.empty()) {
      // The batch never reaches the completer: wait for what was issued, then fail it.
      stream_->synchronize();
      for (auto& group : completion->groups)
        if (group.decoder) decoders_->give_back(std::move(group.decoder));
      for (RequestId id : issued) {
        release_region_locked(entry_ref(id));
        finish_locked(id, RequestState::failed, failure);
      }
      return;
    }
    for (RequestId id : issued) mark_issued_locked(id);
    completions_.push_back(std::move(completion));
    completions_changed_.notify_all();
  }

  // Chunks of one codec decoded by one decoder call.
  struct DecodeGroup {
    std::vector<std::size_t> indices;  // into Completion::ids
    std::vector<codec::gpu::DecodeItem> items;
    std::vector<std::string> labels;
    std::shared_ptr<codec::gpu::DecoderPool::Pooled> decoder;
  };

  // A batch of GPU work: its requests are done once its event is.
  struct Completion {
    std::vector<RequestId> ids;
    std::vector<std::uint64_t> copied_bytes, decoded_bytes;  // per id: its share of the batch's times
    std::vector<DecodeGroup> groups;
    gpu::Event started{true}, copied{true};  // around the batch's copies (timing events)
    gpu::Event event{true};                  // after its decoding: the batch is done
  };

  // Completes batches in issue order (the copy stream runs them in that order).
  void complete_loop() {
    while (true) {
      std::unique_ptr<Completion> completion;
      {
        std::unique_lock lock(mutex_);
        completions_changed_.wait(lock, [&] { return !completions_.empty() || finisher_done_; });
        if (completions_.empty()) return;
        completion = std::move(completions_.front());
        completions_.pop_front();
      }
      std::string gpu_failure;  // the batch's GPU work failed: all of it fails
      double copy_s = 0, decode_s = 0;
      try {
        completion->event.synchronize();
        copy_s = completion->copied.elapsed_ms_since(completion->started) / 1e3;
        decode_s = completion->event.elapsed_ms_since(completion->copied) / 1e3;
      } catch (const std::exception& error) {
        gpu_failure = error.what();
      }
      const auto total = [](const std::vector<std::uint64_t>& bytes) {
        return static_cast<double>(std::accumulate(bytes.begin(), bytes.end(), std::uint64_t{0}));
      };
      const double copied_total = total(completion->copied_bytes), decoded_total = total(completion->decoded_bytes);
      // Per request, why decoding failed (empty: it decoded).
      std::vector<std::string> decode_failures(completion->ids.size());
      for (auto& group : completion->groups) {
        try {
          const auto failed = group.decoder->decoder.failures(group.labels);
          for (std::size_t k = 0; k < group.indices.size(); ++k) decode_failures[group.indices[k]] = failed[k];
        } catch (const std::exception& error) {  // the results could not be read: the group fails
          for (std::size_t index : group.indices) decode_failures[index] = error.what();
        }
        decoders_->give_back(std::move(group.decoder));
      }
      std::lock_guard lock(mutex_);
      for (std::size_t i = 0; i < completion->ids.size(); ++i) {
        Entry& entry = entry_ref(completion->ids[i]);
        // Each request's share of its batch's times, by bytes.
        if (copied_total > 0) entry.status.h2d_s = copy_s * static_cast<double>(completion->copied_bytes[i]) / copied_total;
        if (completion->decoded_bytes[i] != 0)
          entry.status.decode_s = decode_s * static_cast<double>(completion->decoded_bytes[i]) / decoded_total;
        release_region_locked(entry);
        if (!gpu_failure.empty()) finish_locked(completion->ids[i], RequestState::failed, gpu_failure);
        else if (!decode_failures[i].empty()) finish_locked(completion->ids[i], RequestState::failed, decode_failures[i]);
        else finish_locked(completion->ids[i], RequestState::done, "");
      }
    }
  }

  void release_region_locked(Entry& entry) {
    if (!entry.region) return;
    ring_->release(*entry.region);
    entry.region.reset();
  }

  QueueOptions options_;
  std::optional<gpu::Device> device_;
  std::optional<gpu::Stream> stream_;
  std::optional<gpu::DeviceBuffer> fence_memory_;
  std::optional<gpu::DeviceBuffer> device_scratch_;  // the staging ring's twin on the GPU, same offsets
  mutable std::atomic<bool> memory_operations_{false};
  std::optional<staging::StagingRing> ring_;

  mutable std::mutex mutex_;
  mutable std::condition_variable fences_changed_;
  std::condition_variable work_, flights_changed_, completions_changed_;
  std::deque<std::unique_ptr<Completion>> completions_;
  bool finisher_done_ = false;
  std::deque<OpenFile> files_;  // by FileId; a deque: an entry's pointers into one stay valid
  std::uint64_t pinned_bytes_ = 0;      // of files page-locked (auto reserves before pinning)
  mutable std::vector<std::string> fallbacks_;  // taken, each once: describe() lists them
  std::optional<detail::ThreadPool> cufile_pool_;
  codec::ChunkChecker checker_{options_.decode_threads};  // the finisher and decode_threads - 1 helpers
  std::deque<Entry> entries_;  // entries_[0] is request first_id_: older ones are retired
  RequestId first_id_ = 0, oldest_open_ = 0;
  std::uint64_t awaiting_submit_ = 0;  // enqueued, not cancelled, not yet submitted
  std::vector<RequestId> unsubmitted_;
  std::priority_queue<RequestId, std::vector<RequestId>, PendingOrder> pending_{PendingOrder{this}};
  std::uint64_t issued_count_ = 0, finished_count_ = 0;
  std::deque<Fence> fences_;  // fences_[0] is fence first_fence_
  FenceId first_fence_ = 0, oldest_unrecorded_ = 0, oldest_unsignaled_ = 0;
  std::deque<Flight> flights_;
  std::uint64_t completed_ = 0;
  std::uint64_t direct_bytes_ = 0;
  std::uint32_t reads_in_flight_ = 0;
  Clock::time_point depth_changed_at_;
  double depth_seconds_ = 0;  // reads in flight integrated over time
  QueueStats stats_;
  bool stopping_ = false;
  bool dispatcher_done_ = false;

  // Two decoders per codec, each for a batch of max_batch chunks of up to max_decode_chunk_bytes.
  std::optional<codec::gpu::DecoderPool> decoders_;

  std::thread dispatcher_, finisher_, completer_;
};

Queue::Queue(QueueOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Queue::~Queue() noexcept = default;
FileId Queue::add_file(const std::string& path) { return impl_->add_file(path); }
void Queue::close_file(FileId file) { impl_->close_file(file); }
RequestId Queue::enqueue(Request request) { return impl_->enqueue(std::move(request)); }
FenceId Queue::enqueue_signal() { return impl_->enqueue_signal(); }
void Queue::submit() { impl_->submit(); }
bool Queue::cancel(RequestId id) { return impl_->cancel(id); }
std::size_t Queue::cancel_tag(std::uint64_t tag) { return impl_->cancel_tag(tag); }
RequestStatus Queue::status(RequestId id) const { return impl_->status(id); }
RequestSummary Queue::summarize(std::span<const RequestId> ids) const { return impl_->summarize(ids); }
bool Queue::is_signaled(FenceId fence) const { return impl_->is_signaled(fence); }
void Queue::wait(FenceId fence) const { impl_->wait(fence); }
std::uintptr_t Queue::fence_event(FenceId fence) const { return impl_->fence_event(fence); }
void Queue::wait_on_stream(FenceId fence, std::uintptr_t stream) const { impl_->wait_on_stream(fence, stream); }
void Queue::drain() const { impl_->drain(); }
QueueStats Queue::stats() const { return impl_->stats(); }
bool Queue::has_gpu() const noexcept { return impl_->has_gpu(); }
std::uintptr_t Queue::copy_stream() const noexcept { return impl_->copy_stream(); }
std::string Queue::describe() const { return impl_->describe(); }
std::vector<std::string> Queue::fallbacks() const { return impl_->fallbacks(); }
std::uint64_t Queue::pinned_host_bytes() const { return impl_->pinned_host_bytes(); }
std::uint64_t Queue::device_bytes() const { return impl_->device_bytes(); }

}  // namespace headrace::queue
