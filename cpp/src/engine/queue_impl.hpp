// The engine queue's insides, shared by its three files: queue.cpp (files, the caller's API),
// dispatch.cpp (the dispatcher thread) and finish.cpp (the finisher and completer threads).
#pragma once

#include <sys/types.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "headrace/codec/chunk_checks.hpp"
#include "headrace/codec/gpu/chunk_hasher.hpp"
#include "headrace/codec/gpu/decode_batch.hpp"
#include "headrace/detail/seconds.hpp"
#include "headrace/engine/queue.hpp"
#include "headrace/format/layout.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/stream.hpp"
#include "headrace/io/cufile_backend.hpp"
#include "headrace/io/read_coalescing.hpp"
#include "headrace/io/read_path.hpp"
#include "headrace/queue/flight.hpp"
#include "headrace/queue/request_book.hpp"
#include "headrace/staging/held_copy.hpp"
#include "headrace/staging/pinned_file.hpp"
#include "headrace/staging/pinned_files.hpp"
#include "headrace/staging/staging_ring.hpp"

namespace headrace::engine {

using Clock = detail::SteadyClock;

inline constexpr std::uint32_t fence_words = 1u << 16;  // device words for value fences, reused by generation
inline constexpr std::uint64_t decoder_total_bytes = std::uint64_t{256} << 20;     // raw bytes one decoder call takes
inline constexpr std::size_t max_decode_items = 16384;
inline constexpr std::size_t gpu_checks_a_flight = 4096;  // the rest of a larger flight is checked on the host  // blocks one decoder call takes (a flight's chunks, cut in blocks)

// How a dispatched request travels.
enum class Route : std::uint8_t {
  direct,             // read straight into its host destination
  host_decode,        // staging -> CPU decode -> host destination
  device_copy,        // staging (or a page-locked file) -> H2D -> device destination
  device_decode,      // staging -> H2D into device scratch -> nvCOMP -> device destination
  device_cpu_decode,  // staging -> CPU decode into staging -> H2D -> device destination
  cufile_copy,        // cuFile reads straight into the device destination (compressed chunks take
                      // device_decode: their checksums must be checked on the host before nvCOMP)
};

// Direct and cuFile copies read straight into their destination; the rest go through a region of the
// ring (GPU decoding also uses the region's twin in device scratch).
[[nodiscard]] constexpr bool uses_staging(Route route) { return route != Route::direct && route != Route::cufile_copy; }

// Staging a request takes: the CPU-decode-then-copy route keeps the raw bytes after the stored ones.
[[nodiscard]] inline std::uint64_t staging_bytes_of(const Request& r, Route route) {
  return format::layout::align_up(r.stored_size) + (route == Route::device_cpu_decode ? r.raw_size : 0);
}

// Reads by where their bytes are: the disk's and the page cache's, each with its own staging ring,
// flights and finisher, so that a frame the page cache holds never waits behind the disk's reads (a
// ring reuses space in order, and a finisher takes its flights in order) and the disk never idles
// while one is copied. GPU decoding stays in the disk lane: its scratch twin mirrors the disk ring.
enum Lane : std::size_t { disk_lane, cache_lane, lanes };

// What the engine keeps per request beside its bookkeeping.
struct Plan {
  Route route = Route::direct;
  Lane lane = disk_lane;  // set at submit, with read_route
  // Where its bytes are read from (mincore at submit); none for pinned and cuFile requests.
  std::optional<io::ReadRoute> read_route;
  // Device routes of a page-locked file or of a file held: its stored bytes are DMA'd from the file's
  // pages or from the held copy, [pinned_data, pinned_data + pinned_size) (both live with the engine).
  const std::byte* pinned_data = nullptr;
  std::uint64_t pinned_size = 0;
  bool held = false;  // from the held copy
  // Read from the disk for a plain copy to the GPU: the copy's DMA writes it back into the file's held copy
  // (finish.cpp), recorded held once the copy is done.
  bool fills_by_dma = false;
  std::optional<staging::Region> region;  // its staging, between dispatch and the end of its GPU work
  // Its checksum, computed by the thread that read it as its bytes landed (page cache's lane).
  std::optional<std::uint64_t> landed_checksum;
  const codec::Chain* chain = nullptr;  // how a compressed request is stored (codec::chunk_chain keeps it)
  [[nodiscard]] bool pinned() const noexcept { return pinned_data != nullptr; }
  // Its bytes come through the file's read path, which the page cache is asked about (not DMA'd from a
  // page-locked file, not read by cuFile).
  [[nodiscard]] bool uses_read_path() const noexcept { return !pinned() && route != Route::cufile_copy; }
  // A pinned copy needs no staging; a pinned decode still takes a region for its scratch twin.
  [[nodiscard]] bool needs_region() const noexcept { return uses_staging(route) && !(pinned() && route == Route::device_copy); }
};

using Book = queue::RequestBook<Plan, std::unique_ptr<gpu::Event>>;
using Entry = Book::Entry;

// A file the engine reads: its read path, and what else it holds for it.
struct OpenFile {
  std::string path;
  std::tuple<dev_t, ino_t, off_t, std::int64_t> identity;  // device, inode, size, mtime (ns)
  std::unique_ptr<io::FileReadPath> reads;
  std::unique_ptr<io::CufileBackend> cufile;  // backend cufile: uncompressed device destinations
  std::unique_ptr<staging::PinnedFile> pinned;
  // A file read from the disk for the GPU and not page-locked: its bytes as the disk lane read them,
  // kept for later passes (staging/held_copy.hpp), locked by `locking` (declared after it: it ends first).
  std::unique_ptr<staging::HeldCopy> held;
  std::future<void> locking;
  std::string pin_note;  // why it is (not) page-locked or held
  io::CachePolicy cache_policy = io::CachePolicy::auto_;  // the queue's, or its own (FileOptions)
  std::string route_note;  // why its policy differs from the queue's ("" when it does not)
  bool closed = false;   // close_file: its id is never read again
};

// Chunks of one nvCOMP coding decoded by one decoder call (codec/gpu/chain_decoding.hpp): nvCOMP decodes
// their blocks, then the filters of chains that have them are undone on the same stream.
// A batch of GPU work: its requests are done once its event is.
struct Completion {
  std::uint64_t flight = 0;  // its flight's number (timeline)
  std::vector<RequestId> ids;
  std::vector<std::uint64_t> copied_bytes, decoded_bytes;  // per id: its share of the batch's times
  codec::gpu::DecodeBatch decoding;
  std::vector<std::size_t> decoded;  // per chunk of decoding (by number): into ids
  gpu::Event started{true}, copied{true};  // around the batch's copies (timing events)
  gpu::Event event{true};                  // after its decoding: the batch is done
};

class Queue::Impl {
 public:
  explicit Impl(QueueOptions options);
  ~Impl();

  FileId add_file(const std::string& path, const FileOptions& file_options);
  void close_file(FileId id);
  std::size_t close_path(const std::string& path);
  RequestId enqueue(Request request);
  FenceId enqueue_signal();
  void submit();
  bool cancel(RequestId id);
  std::size_t cancel_tag(std::uint64_t tag);
  RequestStatus status(RequestId id) const;
  RequestSummary summarize(std::span<const RequestId> ids) const;
  RouteExplanation explain(const Request& request);
  bool is_signaled(FenceId fence) const;
  void wait(FenceId fence) const;
  std::uintptr_t fence_event(FenceId fence) const;
  void wait_on_stream(FenceId fence, std::uintptr_t stream) const;
  void drain() const;
  QueueStats stats() const;
  std::vector<FlightRecord> flight_timeline() const;
  bool has_gpu() const noexcept { return device_.has_value(); }
  const QueueOptions& options() const noexcept { return options_; }
  std::uintptr_t copy_stream() const noexcept { return stream_ ? reinterpret_cast<std::uintptr_t>(stream_->handle()) : 0; }
  std::uint64_t pinned_host_bytes() const;
  std::uint64_t device_bytes() const;
  void make_current() const { use_context(); }
  std::string describe() const;
  std::vector<std::string> fallbacks() const;

 private:
  // ---- queue.cpp ----
  static QueueOptions validated(QueueOptions options);
  // CUDA driver calls need the GPU's context current on the calling thread (any thread may call in).
  void use_context() const {
    if (device_) device_->make_current();
  }
  void pin_if_asked(FileId id);
  std::unique_ptr<staging::HeldCopy> hold_if_it_fits(const std::string& path, std::uint64_t size, io::CachePolicy policy,
                                                     std::string& note);
  void start_locking_locked(OpenFile& file);
  Route route_of(const Request& r, bool compressed) const;
  void note_fallback_locked(const std::string& fallback) const;
  void record_fence_locked(FenceId id, Book::Fence& fence);
  gpu::CUdeviceptr fence_word(FenceId fence) const {
    return fence_memory_->pointer() + (fence % fence_words) * sizeof(std::uint32_t);
  }
  static std::uint32_t fence_generation(FenceId fence) { return static_cast<std::uint32_t>(fence / fence_words + 1); }
  // With the lock held: a request's staging goes back before it finishes (the book retires only
  // requests that hold nothing).
  void release_region_locked(Entry& entry);
  // With the lock held: staging or direct bytes came back; wakes a dispatcher that waits for room.
  void room_freed_locked();
  void finish_locked(RequestId id, queue::RequestState state, std::string message, std::exception_ptr error = nullptr);
  void fail_locked(RequestId id, std::exception_ptr error);  // failed, its error kept as thrown
  // With the lock held: the flight's `stage` ended at `at`, and so did every later stage until it is
  // stamped itself (a flight without GPU work skips those). Nothing once newer flights displaced it.
  void stamp_flight_locked(std::uint64_t number, double FlightRecord::*stage, Clock::time_point at);
  // With the lock held, before reads_in_flight_ changes: the depth since the last change, integrated.
  void account_depth_locked();

  // ---- dispatch.cpp ----
  // With the lock held, at submit: a request's lane, and its read route (asked: where its bytes were
  // found just before, without the lock; nullopt: ask the page cache now).
  Lane plan_lane_locked(Entry& entry, std::optional<io::ReadRoute> asked) const;
  void dispatch_loop();
  void hash_as_they_land_locked(const std::vector<RequestId>& ids, io::CoalescedReads& joined);
  // With the lock held: sends one flight of the lane's pending requests; false when its first cannot
  // start (no staging or direct bytes free now).
  bool send_flight_locked(Lane lane, std::unique_lock<std::mutex>& lock);

  // ---- finish.cpp ----
  // A flight's device work once its copies and GPU checks are issued, before the host has the sums: the
  // finisher issues the next flight's copies before it waits for them (copies and hashing overlap).
  struct IssuedChecks {
    std::vector<RequestId> ids;
    std::uint64_t flight = 0;
    Lane lane{};
    std::size_t set = 0;  // which of the lane's GpuChecks holds its sums
    std::unique_ptr<Completion> completion;
    std::vector<bool> copied_early, on_gpu;
    bool copies_late = false;
    std::vector<std::pair<std::size_t, codec::ChunkCheck>> gpu_checked;  // (index in ids, its check)
    std::exception_ptr failure;
  };
  // What the disk lane read for the GPU, bound for its file's held copy.
  struct HeldFill {
    RequestId id;
    FileId file;
    staging::HeldCopy* copy;
    std::uint64_t offset;
    const std::byte* bytes;  // where it landed (staging)
    std::uint64_t size;
    bool plain;  // a plain copy to the GPU, which may fill the held copy back by DMA
  };
  void fill_held_copies(const std::vector<HeldFill>& fills);
  void finish_loop(Lane lane);
  std::optional<IssuedChecks> finish_flight(queue::Flight& flight, Lane lane, std::size_t set);
  // on_gpu (by id): checked on the GPU, so not here.
  std::vector<std::exception_ptr> check_and_decode(const std::vector<RequestId>& ids, std::vector<double>& decode_seconds,
                                                   const std::vector<bool>& on_gpu = {});
  codec::ChunkCheck chunk_check_locked(const Entry& entry) const;
  void finish_on_host(const std::vector<RequestId>& ids);
  // Issues a flight's copies of plain chunks and their GPU checks; what is left (checks on the host, the
  // sums compared, the rest issued) is complete_on_device's, now when nothing was hashed on the GPU.
  std::optional<IssuedChecks> finish_on_device(const std::vector<RequestId>& ids, std::uint64_t flight, Lane lane, std::size_t set);
  void complete_on_device(IssuedChecks issued);
  void complete_loop();
  // Where a request's stored bytes are once read (or, pinned, where they always were), and the end of
  // the host buffer they lie in.
  static const std::byte* stored_bytes(const Entry& entry);
  const std::byte* source_end(const Entry& entry) const;

  QueueOptions options_;
  std::optional<gpu::Device> device_;
  std::optional<gpu::Stream> stream_;
  std::optional<gpu::DeviceBuffer> fence_memory_;
  std::optional<gpu::DeviceBuffer> device_scratch_;  // the staging ring's twin on the GPU, same offsets
  mutable std::atomic<bool> memory_operations_{false};
  // Per lane; the page cache's is a quarter of staging_bytes (its reads take milliseconds).
  std::array<std::optional<staging::StagingRing>, lanes> rings_;
  std::optional<staging::PinnedFiles> pinned_files_;
  // Two decoders per coding, each for a batch of max_batch chunks of up to max_decode_chunk_bytes.
  std::optional<codec::gpu::DecoderPool> decoders_;
  // GPU decoding runs on two streams of its own, flights taking turns, each after its flight's copies on
  // the copy stream: nvCOMP decodes a batch of zstd chunks in about the time of its slowest chunk (30 ms
  // for 4 MiB ones, 20 to 64 chunks alike on an H200), so two batches side by side decode twice the bytes,
  // where one after the other on the copy stream held a held file's passes to 0.5 x nvCOMP's rate. Each
  // stream's tail event is its last batch's end; a fence waits for both tails on the copy stream, so what
  // waits on a fence, or on the copy stream after it, sees the decoded bytes.
  struct DecodeLane {
    gpu::Stream stream;
    gpu::Event tail{false};
  };
  std::array<std::optional<DecodeLane>, 2> decode_lanes_;
  std::size_t next_decode_lane_ = 0;  // under issue_mutex_
  codec::ChunkChecker checker_{options_.decode_threads};  // the finisher and decode_threads - 1 helpers
  // check_on_gpu: the hash kernels on a stream of their own, and per lane two sets of the sums on the GPU
  // and where they come back to (its finisher holds one flight's while it issues the next's).
  struct GpuChecks {
    gpu::DeviceBuffer sums{gpu_checks_a_flight * sizeof(std::uint64_t)};
    gpu::PinnedBuffer landed{gpu_checks_a_flight * sizeof(std::uint64_t)};
    gpu::Event copied{false}, hashed{false};
  };
  std::optional<codec::gpu::ChunkHasher> hasher_;
  std::optional<gpu::Stream> hash_stream_;
  std::array<std::array<std::optional<GpuChecks>, 2>, lanes> gpu_checks_;

  mutable std::mutex mutex_;
  mutable std::condition_variable fences_changed_;
  std::condition_variable work_, flights_changed_, completions_changed_;
  Book book_;
  std::deque<OpenFile> files_;  // by FileId; a deque: pointers into an entry stay valid
  mutable std::vector<std::string> fallbacks_;  // taken, each once: describe() lists them
  std::array<std::deque<queue::Flight>, lanes> flights_;
  std::mutex issue_mutex_;  // one finisher at a time issues a batch onto the copy stream
  std::deque<std::unique_ptr<Completion>> completions_;
  std::uint64_t direct_bytes_ = 0;  // of reads in flight straight into their destinations
  // Counts what may let a stalled dispatcher go on (staging or direct bytes freed, requests submitted,
  // the queue stopping); it waits on work_ for a change.
  std::uint64_t dispatch_events_ = 0;
  bool dispatcher_stalled_ = false;  // it waits for room (not for requests)
  std::uint32_t reads_in_flight_ = 0;
  Clock::time_point depth_changed_at_;
  double depth_seconds_ = 0;  // reads in flight integrated over time
  QueueStats stats_;          // dispatch counters (request totals come from the book)
  const Clock::time_point made_at_ = Clock::now();
  std::uint64_t flights_sent_ = 0;
  std::vector<FlightRecord> timeline_ = std::vector<FlightRecord>(flight_timeline_capacity);  // by number % capacity
  bool stopping_ = false, dispatcher_done_ = false, finishers_done_ = false;

  std::thread dispatcher_, completer_;
  std::array<std::thread, lanes> finishers_;
};

}  // namespace headrace::engine
