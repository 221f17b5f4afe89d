#include "headrace/queue/request_queue.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <queue>
#include <map>
#include <numeric>
#include <set>
#include <thread>
#include <tuple>

#include "headrace/codec/cpu/chunk_codec.hpp"
#include "headrace/codec/cpu/gdeflate.hpp"
#include "headrace/codec/gpu/batched_decoder.hpp"
#include "headrace/detail/parallel_for.hpp"
#include "headrace/detail/seconds.hpp"
#include "headrace/detail/thread_pool.hpp"
#include "headrace/error.hpp"
#include "headrace/format/checksum.hpp"
#include "headrace/format/layout.hpp"
#include "headrace/gpu/cufile_reader.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/host_to_device_copies.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/pinned_file.hpp"
#include "headrace/gpu/stream.hpp"
#include "headrace/io/read_coalescing.hpp"
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

namespace {

using Clock = detail::SteadyClock;
using format::CodecId;
using format::layout::align_up;

constexpr std::uint32_t fence_words = 1u << 16;  // device words for value fences, reused by generation
constexpr std::uint64_t max_decode_chunk_bytes = std::uint64_t{16} << 20;  // nvCOMP's lz4 and zstd chunk limit

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
  bool cancel_requested = false;
  bool issued = false;  // will do no more GPU work (finished ones too)
  std::optional<staging::Region> region;
  Clock::time_point submitted_at, dispatched_at, read_at;
};

// A GPU decoder of one codec; one batch uses it at a time.
struct PooledDecoder {
  CodecId codec;
  codec::gpu::BatchedDecoder decoder;
  PooledDecoder(CodecId c, std::size_t chunks, std::uint64_t largest, std::uint64_t total)
      : codec(c), decoder(c, {chunks, largest, total}) {}
};

struct Fence {
  RequestId limit = 0;           // covers requests with id < limit
  std::uint64_t unfinished = 0;  // of those
  std::uint64_t unissued = 0;    // of those, not yet issued to the GPU stream (or finished)
  bool signaled = false;
  bool recorded = false;         // its event and value are on the copy stream
  std::unique_ptr<gpu::Event> event;
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
  explicit Impl(QueueOptions options) : options_(std::move(options)), start_(Clock::now()) {
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
    }
    if (options_.cufile) {
      HEADRACE_EXPECT(device_.has_value(), UsageError, "cuFile reads need a queue made for a GPU (device >= 0)");
      const std::string why = gpu::cufile_unavailable_reason();
      HEADRACE_EXPECT(why.empty(), UnavailableError, "cuFile unavailable: " + why);
      cufile_pool_.emplace(options_.io.threads);
    }
    HEADRACE_EXPECT(!options_.pin_files || device_.has_value(), UsageError,
                    "pin_files page-locks files for GPU copies: it needs a queue made for a GPU (device >= 0)");
    ring_.emplace(options_.staging_bytes, device_.has_value());
    // The finisher's helpers for checksums and CPU decoding (the finisher itself is one more).
    const unsigned check_threads = options_.decode_threads != 0 ? options_.decode_threads
                                                                : std::max(1u, std::thread::hardware_concurrency());
    if (check_threads > 1) check_pool_.emplace(check_threads - 1);
    if (device_ && options_.decode_on_gpu) make_decoders();
    dispatcher_ = std::thread([this] { dispatch_loop(); });
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

  // Decoders are made here, never on the data path (see finish_on_device): two per codec, each for a
  // batch of max_batch chunks of up to max_decode_chunk_bytes and 256 MiB in all.
  void make_decoders() {
    decoder_chunks_ = options_.max_batch;
    decoder_total_bytes_ = std::uint64_t{256} << 20;
    for (CodecId codec : {CodecId::lz4, CodecId::zstd, CodecId::gdeflate}) {
      std::string why;
      if (!codec::gpu::gpu_decoder_available(codec, &why)) {
        gpu_decode_unavailable_[codec] = why;
        continue;
      }
      for (int k = 0; k < 2; ++k) {
        auto decoder = std::make_shared<PooledDecoder>(codec, decoder_chunks_, max_decode_chunk_bytes, decoder_total_bytes_);
        warm_up(*decoder);
        idle_decoders_.push_back(std::move(decoder));
      }
    }
  }

  // Decodes one small chunk now, so that nvCOMP's kernels are loaded here rather than on the data
  // path (CUDA loads modules lazily), and a decoder that decodes wrong fails the queue's construction.
  void warm_up(PooledDecoder& pooled) {
    if (pooled.codec == CodecId::gdeflate && !codec::cpu::gdeflate_available(nullptr)) return;  // no sample to encode
    std::vector<std::byte> raw(4096);
    for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = std::byte(i % 7);
    const auto stored = codec::cpu::encode(pooled.codec, 0, raw);
    const gpu::CUdeviceptr input = device_scratch_->pointer();
    const gpu::CUdeviceptr output = input + align_up(stored.size());
    const auto stream = stream_->handle();
    gpu::check(gpu::driver()->cuMemcpyHtoDAsync(input, stored.data(), stored.size(), stream), "cuMemcpyHtoDAsync");
    const codec::gpu::DecodeItem item{input, stored.size(), output, raw.size()};
    pooled.decoder.decode_async({&item, 1}, stream);
    const std::string label = std::string("warm-up ") + format::to_string(pooled.codec) + " chunk";
    pooled.decoder.check({&label, 1});
    std::vector<std::byte> back(raw.size());
    gpu::copy_to_host(back.data(), output, back.size());
    HEADRACE_EXPECT(back == raw, CodecError, label + ": the GPU decoded other bytes than the CPU encoded");
  }

  // CUDA driver calls need the GPU's context current on the calling thread (any thread may call in).
  void use_context() const {
    if (device_) device_->make_current();
  }

  FileId add_file(const std::string& path) {
    auto backend = io::open_backend(options_.backend, path, io::BackendOptions{options_.io});
    std::unique_ptr<gpu::CufileReader> reader;
    if (options_.cufile) reader = std::make_unique<gpu::CufileReader>(path, device_->context());
    std::unique_ptr<gpu::PinnedFile> pinned;
    if (options_.pin_files && device_) {
      use_context();
      pinned = std::make_unique<gpu::PinnedFile>(path);
    }
    std::lock_guard lock(mutex_);
    files_.push_back(std::move(backend));
    cufile_readers_.push_back(std::move(reader));
    pinned_files_.push_back(std::move(pinned));
    return static_cast<FileId>(files_.size() - 1);
  }

  RequestId enqueue(Request request) {
    std::lock_guard lock(mutex_);
    HEADRACE_EXPECT(request.file < files_.size(), UsageError, "request for file " + std::to_string(request.file) +
                                                                  ": only " + std::to_string(files_.size()) + " files added");
    const std::string name = request.label.empty() ? files_[request.file]->path() + ": offset " + std::to_string(request.offset)
                                                   : request.label;
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
    entry.route = route_of(request);
    entry.pinned = pinned_files_[request.file] != nullptr && request.destination.kind == MemoryKind::device;
    if (entry.route == Route::device_decode) {
      HEADRACE_EXPECT(request.checksum.has_value(), UsageError,
                      name + ": GPU decoding needs the chunk's checksum, checked on the host first (nvCOMP trusts its "
                             "input: a corrupt frame can fault the GPU); give a checksum or decode_on='cpu'");
      const auto missing = gpu_decode_unavailable_.find(request.codec);
      HEADRACE_EXPECT(missing == gpu_decode_unavailable_.end(), UnavailableError,
                      name + ": no GPU decoder for " + format::to_string(request.codec) + ": " +
                          (missing == gpu_decode_unavailable_.end() ? "" : missing->second) +
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
    entries_.push_back(std::move(entry));
    unsubmitted_.push_back(entries_.size() - 1);
    return entries_.size() - 1;
  }

  FenceId enqueue_signal() {
    std::unique_lock lock(mutex_);
    Fence fence;
    fence.limit = entries_.size();
    // A fence covers every request so far, and a finished request is issued: counts, not a scan, so a
    // long-lived queue (a frame loop's thousands of fences) pays nothing for its history.
    fence.unfinished = entries_.size() - finished_count_;
    fence.unissued = entries_.size() - issued_count_;
    fence.signaled = fence.unfinished == 0;
    use_context();
    if (device_) fence.event = std::make_unique<gpu::Event>();
    fences_.push_back(std::move(fence));
    const FenceId id = fences_.size() - 1;
    if (fences_[id].unissued == 0) record_fence(id);
    if (fences_[id].signaled) fences_changed_.notify_all();
    return id;
  }

  void submit() {
    {
      std::lock_guard lock(mutex_);
      const auto now = Clock::now();
      for (RequestId id : unsubmitted_) {
        Entry& entry = entries_[id];
        if (entry.status.state != RequestState::enqueued) continue;  // cancelled before submit
        entry.status.state = RequestState::submitted;
        entry.submitted_at = now;
        pending_.push(id);
      }
      unsubmitted_.clear();
    }
    work_.notify_all();
  }

  bool cancel(RequestId id) {
    std::unique_lock lock(mutex_);
    HEADRACE_EXPECT(id < entries_.size(), UsageError, "no request " + std::to_string(id));
    return cancel_locked(id);
  }

  std::size_t cancel_tag(std::uint64_t tag) {
    std::unique_lock lock(mutex_);
    std::size_t cancelled = 0;
    for (RequestId id = 0; id < entries_.size(); ++id)
      if (entries_[id].request.tag == tag && !entries_[id].status.finished() && cancel_locked(id)) ++cancelled;
    return cancelled;
  }

  RequestStatus status(RequestId id) const {
    std::lock_guard lock(mutex_);
    HEADRACE_EXPECT(id < entries_.size(), UsageError, "no request " + std::to_string(id));
    return entries_[id].status;
  }

  bool is_signaled(FenceId fence) const {
    std::lock_guard lock(mutex_);
    return fence_at(fence).signaled;
  }

  void wait(FenceId fence) const {
    std::unique_lock lock(mutex_);
    fence_at(fence);
    fences_changed_.wait(lock, [&] { return fences_[fence].signaled; });
  }

  std::uintptr_t fence_event(FenceId fence) const {
    std::unique_lock lock(mutex_);
    HEADRACE_EXPECT(device_.has_value(), UsageError, "fence events need a queue made for a GPU");
    fence_at(fence);
    fences_changed_.wait(lock, [&] { return fences_[fence].recorded; });
    return reinterpret_cast<std::uintptr_t>(fences_[fence].event->handle());
  }

  void wait_on_stream(FenceId fence, std::uintptr_t stream) const {
    HEADRACE_EXPECT(device_.has_value(), UsageError, "waiting on a stream needs a queue made for a GPU");
    const auto consumer = reinterpret_cast<gpu::CUstream>(stream);
    use_context();
    if (memory_operations_) {
      {
        std::lock_guard lock(mutex_);
        fence_at(fence);
      }
      const gpu::CUresult result = gpu::driver()->cuStreamWaitValue32(consumer, fence_word(fence), fence_generation(fence),
                                                                      gpu::stream_wait_value_geq);
      if (result == gpu::cuda_success) return;
      memory_operations_ = false;  // refused here: wait for the event from now on
    }
    {
      std::lock_guard lock(mutex_);
      const Fence& f = fence_at(fence);
      // Without memory operations the host must wait for the event's record: never before a submit.
      const bool unsubmitted = std::any_of(unsubmitted_.begin(), unsubmitted_.end(), [&](RequestId id) {
        return id < f.limit && entries_[id].status.state == RequestState::enqueued;
      });
      HEADRACE_EXPECT(f.recorded || !unsubmitted, UsageError,
                      "wait_on_stream before submit() needs a queue made with stream_value_fences: submit first");
    }
    gpu::check(gpu::driver()->cuStreamWaitEvent(consumer, reinterpret_cast<gpu::CUevent>(fence_event(fence)), 0),
               "cuStreamWaitEvent");
  }

  void drain() const {
    std::unique_lock lock(mutex_);
    fences_changed_.wait(lock, [&] {
      return std::all_of(entries_.begin(), entries_.end(), [](const Entry& e) {
        return e.status.state == RequestState::enqueued || e.status.finished();
      });
    });
  }

  QueueStats stats() const {
    std::lock_guard lock(mutex_);
    QueueStats result = stats_;
    result.staging_waits = ring_->waits();
    result.checksums_checked = checksums_checked_;
    return result;
  }

  bool has_gpu() const noexcept { return device_.has_value(); }
  std::uintptr_t copy_stream() const noexcept { return stream_ ? reinterpret_cast<std::uintptr_t>(stream_->handle()) : 0; }

  std::string describe() const {
    std::string text = std::string("queue backend=") + io::to_string(options_.backend) +
                       " staging=" + std::to_string(options_.staging_bytes >> 20) + "MiB" +
                       (ring_->pinned() ? " pinned" : " pageable") + " batch=" + std::to_string(options_.max_batch);
    if (!device_) return text + " destinations=host";
    text += " gpu=" + std::to_string(options_.device);
    if (options_.cufile) {
      const auto driver = gpu::CufileDriver::shared();
      text += std::string(" cufile=") + shim::to_string(driver->mode()) + " (" + driver->mode_reason() + ")";
    }
    if (options_.pin_files) {
      double seconds = 0;
      for (const auto& pinned : pinned_files_) seconds += pinned ? pinned->register_seconds() : 0;
      text += " pinned-files (page-locked in " + std::to_string(seconds) + " s)";
    }
    if (!options_.verify_checksums) text += " checksums=off";
    text += std::string(" fences=") + (memory_operations_ ? "stream-value" : "event");
    return text + " decode=" + (options_.decode_on_gpu ? "gpu (nvCOMP)" : "cpu");
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
  const std::byte* stored_bytes(const Entry& entry) const {
    const Request& r = entry.request;
    if (entry.pinned) return pinned_files_[r.file]->data() + r.offset;
    if (entry.route == Route::direct) return reinterpret_cast<const std::byte*>(r.destination.address);
    return entry.region->data;
  }

  struct CufileRead {
    FileId file;
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
          status.bytes_read = cufile_readers_[read.file]->read(read.destination, read.size, read.offset);
        } catch (const std::exception& error) {
          status.error_number = EIO;
          status.message = error.what();
        }
        batch->complete(i, std::move(status));
      });
    }
    return batch;
  }

  const Fence& fence_at(FenceId fence) const {
    HEADRACE_EXPECT(fence < fences_.size(), UsageError, "no fence " + std::to_string(fence));
    return fences_[fence];
  }

  gpu::CUdeviceptr fence_word(FenceId fence) const {
    return fence_memory_->pointer() + (fence % fence_words) * sizeof(std::uint32_t);
  }
  static std::uint32_t fence_generation(FenceId fence) { return static_cast<std::uint32_t>(fence / fence_words + 1); }

  // With the lock held: every earlier request of this fence is issued (or finished).
  void record_fence(FenceId id) {
    Fence& fence = fences_[id];
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
    Entry& entry = entries_[id];
    switch (entry.status.state) {
      case RequestState::enqueued:
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
    Entry& entry = entries_[id];
    if (entry.issued) return;
    entry.issued = true;
    ++issued_count_;
    while (oldest_unrecorded_ < fences_.size() && fences_[oldest_unrecorded_].recorded) ++oldest_unrecorded_;
    for (FenceId f = oldest_unrecorded_; f < fences_.size(); ++f) {
      Fence& fence = fences_[f];
      if (fence.recorded || id >= fence.limit) continue;
      if (--fence.unissued == 0) record_fence(f);
    }
  }

  // With the lock held.
  void finish_locked(RequestId id, RequestState state, std::string message) {
    Entry& entry = entries_[id];
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
    } else if (state == RequestState::failed) {
      ++stats_.requests_failed;
    } else {
      ++stats_.requests_cancelled;
    }
    mark_issued_locked(id);
    while (oldest_unsignaled_ < fences_.size() && fences_[oldest_unsignaled_].signaled) ++oldest_unsignaled_;
    for (FenceId f = oldest_unsignaled_; f < fences_.size(); ++f) {
      Fence& fence = fences_[f];
      if (fence.signaled || id >= fence.limit) continue;
      if (--fence.unfinished == 0) fence.signaled = true;
    }
    fences_changed_.notify_all();
  }

  void sample_depth_locked() {
    stats_.depth_samples.emplace_back(seconds_between(start_, Clock::now()), reads_in_flight_);
  }

  // ---- dispatcher: priority order, staging, batched backend submits ----
  struct PendingOrder {
    const std::deque<Entry>* entries;
    bool operator()(RequestId a, RequestId b) const {  // true: a after b
      const int pa = (*entries)[a].request.priority, pb = (*entries)[b].request.priority;
      return pa != pb ? pa < pb : a > b;
    }
  };

  void dispatch_loop() {
    std::unique_lock lock(mutex_);
    while (true) {
      work_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping, and nothing left
      Flight flight;
      std::vector<std::vector<io::ReadRequest>> reads(files_.size());
      std::vector<std::vector<bool>> staged(files_.size());  // its memory gap is staging padding
      std::vector<std::vector<RequestId>> read_ids(files_.size());
      std::vector<CufileRead> cufile_reads;
      std::vector<RequestId> cufile_ids, pinned_ids;
      // A flight is finished as a whole (its reads, then their checks and copies), so one flight
      // must not hold all of staging, or the disk would idle while it is checked: at most a quarter.
      const std::uint64_t flight_limit = std::max<std::uint64_t>(ring_->capacity_bytes() / 4, 1);
      std::uint64_t flight_bytes = 0;
      while (!pending_.empty() && flight.ids.size() < options_.max_batch) {
        const RequestId id = pending_.top();
        Entry& entry = entries_[id];
        if (entry.status.finished() || stopping_) {
          pending_.pop();
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
        flight_bytes += entry_bytes;
        entry.status.state = RequestState::reading;
        entry.dispatched_at = Clock::now();
        entry.status.queue_wait_s = seconds_between(entry.submitted_at, entry.dispatched_at);
        if (entry.pinned) {
          pinned_ids.push_back(id);
        } else if (is_cufile(entry.route)) {
          cufile_reads.push_back({entry.request.file, entry.request.offset, entry.request.stored_size,
                                  static_cast<gpu::CUdeviceptr>(entry.request.destination.address)});
          cufile_ids.push_back(id);
        } else {
          reads[entry.request.file].push_back({entry.request.offset, entry.request.stored_size, target});
          staged[entry.request.file].push_back(entry.region.has_value());
          read_ids[entry.request.file].push_back(id);
        }
        flight.ids.push_back(id);
        ++reads_in_flight_;
      }
      if (flight.ids.empty()) continue;
      sample_depth_locked();
      ++stats_.backend_submits;
      std::vector<std::pair<FileId, std::vector<io::ReadRequest>>> batches;
      // Order of ids in the flight = order of the reads the finisher gets back: batch by batch.
      flight.ids.clear();
      std::size_t reads_before = 0;
      for (FileId f = 0; f < reads.size(); ++f) {
        if (reads[f].empty()) continue;
        auto joined = io::coalesce_reads(reads[f], staged[f], {.file_size = files_[f]->file_size()});
        for (auto [read, offset] : joined.carried_by) flight.carried_by.emplace_back(reads_before + read, offset);
        reads_before += joined.reads.size();
        stats_.backend_reads += joined.reads.size();
        flight.ids.insert(flight.ids.end(), read_ids[f].begin(), read_ids[f].end());
        batches.emplace_back(f, std::move(joined.reads));
      }
      for (std::size_t i = 0; i < cufile_ids.size(); ++i) flight.carried_by.emplace_back(reads_before + i, 0);
      stats_.backend_reads += cufile_ids.size();
      flight.ids.insert(flight.ids.end(), cufile_ids.begin(), cufile_ids.end());
      flight.ids.insert(flight.ids.end(), pinned_ids.begin(), pinned_ids.end());
      flight.pinned = pinned_ids.size();
      lock.unlock();
      for (auto& [file, requests] : batches) flight.batches.push_back(files_[file]->submit(std::move(requests)));
      if (!cufile_reads.empty()) flight.batches.push_back(submit_cufile(std::move(cufile_reads)));
      lock.lock();
      flights_.push_back(std::move(flight));
      flights_changed_.notify_all();
    }
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
          status.bytes_read = std::min(entries_[flight.ids[i]].request.stored_size, status.bytes_read > offset ? status.bytes_read - offset : 0);
        reads.push_back(std::move(status));
      }
      for (std::size_t i = flight.ids.size() - flight.pinned; i < flight.ids.size(); ++i) {
        const Request& r = entries_[flight.ids[i]].request;
        io::ReadStatus status;
        const std::uint64_t size = pinned_files_[r.file]->size_bytes();
        status.bytes_read = r.offset < size ? std::min(r.stored_size, size - r.offset) : 0;  // a short "read" fails below
        reads.push_back(std::move(status));
      }
    }
    const auto read_at = Clock::now();
    std::vector<RequestId> host_work, device_work;
    {
      std::lock_guard lock(mutex_);
      for (std::size_t i = 0; i < flight.ids.size(); ++i) {
        Entry& entry = entries_[flight.ids[i]];
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
      sample_depth_locked();
      flights_changed_.notify_all();  // direct bytes freed
    }
    finish_on_host(host_work);
    finish_on_device(device_work);
  }

  // Checksums and CPU decoding of requests whose bytes end on the host (all of them verify here).
  // Returns per request an error message (empty when fine).
  std::vector<std::string> check_and_decode(const std::vector<RequestId>& ids, std::vector<double>& decode_seconds) {
    std::vector<std::string> errors(ids.size());
    decode_seconds.assign(ids.size(), 0.0);
    // A deque's elements stay put while enqueue appends, but its index of blocks may move: look the
    // entries up under the lock, then work on them without it (nobody else writes what is read here).
    std::vector<const Entry*> entries(ids.size());
    {
      std::lock_guard lock(mutex_);
      for (std::size_t i = 0; i < ids.size(); ++i) entries[i] = &entries_[ids[i]];
    }
    auto check_one = [&](std::uint64_t i) {
      const Entry& entry = *entries[i];
      const Request& r = entry.request;
      if (is_cufile(entry.route)) return;  // uncompressed bytes cuFile put on the GPU: not checked
      const std::byte* stored = stored_bytes(entry);
      try {
        if (r.checksum && (options_.verify_checksums || entry.route == Route::device_decode) && !verified_before(entry)) {
          const std::uint64_t sum = format::xxh3_64({stored, r.stored_size});
          HEADRACE_EXPECT(sum == *r.checksum, ChecksumMismatchError,
                          r.label + ": expected checksum " + std::to_string(*r.checksum) + ", found " + std::to_string(sum));
          ++checksums_checked_;
          if (entry.pinned) remember_verified(entry);
        }
        const auto decode_start = Clock::now();
        if (entry.route == Route::host_decode) {
          codec::cpu::decode(r.codec, {stored, r.stored_size},
                             {reinterpret_cast<std::byte*>(r.destination.address), r.raw_size}, r.label, r.offset);
        } else if (entry.route == Route::device_cpu_decode) {
          codec::cpu::decode(r.codec, {stored, r.stored_size}, {entry.region->data + align_up(r.stored_size), r.raw_size},
                             r.label, r.offset);
        }
        if (r.codec != CodecId::none && entry.route != Route::device_decode)
          decode_seconds[i] = seconds_between(decode_start, Clock::now());
      } catch (const std::exception& error) {
        errors[i] = error.what();
      }
    };
    if (check_pool_) {
      detail::parallel_for(*check_pool_, ids.size(), check_one);
    } else {
      for (std::uint64_t i = 0; i < ids.size(); ++i) check_one(i);
    }
    return errors;
  }

  // A pinned file's pages stay in RAM and are never read from disk again, so a range checked once
  // cannot rot; only a writer changing the file in place could change it, and headrace's writers
  // never do (they write a new file and rename it). Checked once per queue, then DMA alone.
  using VerifiedRange = std::tuple<FileId, std::uint64_t, std::uint64_t, std::uint64_t>;  // file, offset, size, sum
  static VerifiedRange range_of(const Entry& entry) {
    const Request& r = entry.request;
    return {r.file, r.offset, r.stored_size, *r.checksum};
  }
  bool verified_before(const Entry& entry) const {
    if (!entry.pinned) return false;
    std::lock_guard lock(verified_mutex_);
    return verified_.count(range_of(entry)) != 0;
  }
  void remember_verified(const Entry& entry) {
    std::lock_guard lock(verified_mutex_);
    verified_.insert(range_of(entry));
  }

  void finish_on_host(const std::vector<RequestId>& ids) {
    if (ids.empty()) return;
    std::vector<double> decode_seconds;
    const std::vector<std::string> errors = check_and_decode(ids, decode_seconds);
    {
      std::lock_guard lock(mutex_);
      for (std::size_t i = 0; i < ids.size(); ++i) {
        entries_[ids[i]].status.decode_s = decode_seconds[i];
        release_region_locked(entries_[ids[i]]);
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
        Entry& entry = entries_[ids[i]];
        entry.status.decode_s = decode_seconds[i];
        if (!errors[i].empty()) {
          release_region_locked(entry);
          finish_locked(ids[i], RequestState::failed, errors[i]);
          continue;
        }
        const Request& r = entry.request;
        const auto destination = static_cast<gpu::CUdeviceptr>(r.destination.address);
        if (entry.route == Route::device_copy) {
          copies.add(destination, stored_bytes(entry), r.raw_size);
        } else if (entry.route == Route::device_cpu_decode) {
          copies.add(destination, entry.region->data + align_up(r.stored_size), r.raw_size);
        } else {
          const gpu::CUdeviceptr scratch = device_scratch_->pointer() + entry.region->offset;
          // A staged chunk is copied with its region's padding, so that neighbours in staging,
          // neighbours in the scratch twin too, travel as one copy.
          copies.add(scratch, stored_bytes(entry), entry.pinned ? r.stored_size : align_up(r.stored_size));
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
          while (first < group.items.size() && part.items.size() < decoder_chunks_ &&
                 total + group.items[first].raw_size <= decoder_total_bytes_) {
            total += group.items[first].raw_size;
            part.indices.push_back(group.indices[first]);
            part.items.push_back(group.items[first]);
            part.labels.push_back(group.labels[first]);
            ++first;
          }
          part.decoder = take_decoder(codec);
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
        if (group.decoder) return_decoder(std::move(group.decoder));
      for (RequestId id : issued) {
        release_region_locked(entries_[id]);
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
    std::shared_ptr<PooledDecoder> decoder;
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
        return_decoder(std::move(group.decoder));
      }
      std::lock_guard lock(mutex_);
      for (std::size_t i = 0; i < completion->ids.size(); ++i) {
        Entry& entry = entries_[completion->ids[i]];
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

  // An idle decoder for codec, waiting for one the completer returns.
  std::shared_ptr<PooledDecoder> take_decoder(CodecId codec) {
    std::unique_lock lock(decoders_mutex_);
    decoders_returned_.wait(lock, [&] {
      return std::any_of(idle_decoders_.begin(), idle_decoders_.end(), [&](const auto& d) { return d->codec == codec; });
    });
    const auto it = std::find_if(idle_decoders_.begin(), idle_decoders_.end(), [&](const auto& d) { return d->codec == codec; });
    auto decoder = *it;
    idle_decoders_.erase(it);
    return decoder;
  }

  void return_decoder(std::shared_ptr<PooledDecoder> decoder) {
    {
      std::lock_guard lock(decoders_mutex_);
      idle_decoders_.push_back(std::move(decoder));
    }
    decoders_returned_.notify_all();
  }

  void release_region_locked(Entry& entry) {
    if (!entry.region) return;
    ring_->release(*entry.region);
    entry.region.reset();
  }

  QueueOptions options_;
  Clock::time_point start_;
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
  std::vector<std::unique_ptr<io::Backend>> files_;
  std::vector<std::unique_ptr<gpu::CufileReader>> cufile_readers_;  // per file, when options_.cufile
  std::vector<std::unique_ptr<gpu::PinnedFile>> pinned_files_;       // per file, when options_.pin_files
  std::optional<detail::ThreadPool> cufile_pool_;
  std::optional<detail::ThreadPool> check_pool_;  // empty with one decode thread: the finisher alone
  mutable std::mutex verified_mutex_;
  std::set<VerifiedRange> verified_;  // ranges of pinned files whose checksums passed
  std::atomic<std::uint64_t> checksums_checked_{0};
  std::deque<Entry> entries_;
  std::vector<RequestId> unsubmitted_;
  std::priority_queue<RequestId, std::vector<RequestId>, PendingOrder> pending_{PendingOrder{&entries_}};
  std::uint64_t issued_count_ = 0, finished_count_ = 0;
  std::vector<Fence> fences_;
  FenceId oldest_unrecorded_ = 0, oldest_unsignaled_ = 0;
  std::deque<Flight> flights_;
  std::uint64_t completed_ = 0;
  std::uint64_t direct_bytes_ = 0;
  std::uint32_t reads_in_flight_ = 0;
  QueueStats stats_;
  bool stopping_ = false;
  bool dispatcher_done_ = false;

  std::mutex decoders_mutex_;
  std::condition_variable decoders_returned_;
  std::map<CodecId, std::string> gpu_decode_unavailable_;  // codecs nvCOMP cannot decode here, and why
  std::size_t decoder_chunks_ = 0;
  std::uint64_t decoder_total_bytes_ = 0;
  std::vector<std::shared_ptr<PooledDecoder>> idle_decoders_;

  std::thread dispatcher_, finisher_, completer_;
};

Queue::Queue(QueueOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Queue::~Queue() noexcept = default;
FileId Queue::add_file(const std::string& path) { return impl_->add_file(path); }
RequestId Queue::enqueue(Request request) { return impl_->enqueue(std::move(request)); }
FenceId Queue::enqueue_signal() { return impl_->enqueue_signal(); }
void Queue::submit() { impl_->submit(); }
bool Queue::cancel(RequestId id) { return impl_->cancel(id); }
std::size_t Queue::cancel_tag(std::uint64_t tag) { return impl_->cancel_tag(tag); }
RequestStatus Queue::status(RequestId id) const { return impl_->status(id); }
bool Queue::is_signaled(FenceId fence) const { return impl_->is_signaled(fence); }
void Queue::wait(FenceId fence) const { impl_->wait(fence); }
std::uintptr_t Queue::fence_event(FenceId fence) const { return impl_->fence_event(fence); }
void Queue::wait_on_stream(FenceId fence, std::uintptr_t stream) const { impl_->wait_on_stream(fence, stream); }
void Queue::drain() const { impl_->drain(); }
QueueStats Queue::stats() const { return impl_->stats(); }
bool Queue::has_gpu() const noexcept { return impl_->has_gpu(); }
std::uintptr_t Queue::copy_stream() const noexcept { return impl_->copy_stream(); }
std::string Queue::describe() const { return impl_->describe(); }

}  // namespace headrace::queue
