#include "headrace/engine/queue.hpp"

#include "headrace/codec/chain.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "headrace/detail/environment.hpp"
#include "headrace/detail/thread_name.hpp"
#include "headrace/error.hpp"
#include "queue_impl.hpp"

namespace headrace::engine {

using format::layout::align_up;
using queue::MemoryKind;
using queue::RequestState;

std::optional<io::BackendKind> QueueOptions::read_path_backend() const {
  return backend && !io::reads_into_gpu(*backend) ? backend : std::nullopt;
}

void QueueOptions::validate() const {
  io::ReadPathOptions{read_path_backend(), cache_policy, io, strict}.validate();
  HEADRACE_EXPECT(device >= -1, UsageError, "device must be a GPU ordinal >= 0, or -1 for host memory, got " + std::to_string(device));
  HEADRACE_EXPECT(staging_bytes >= (std::uint64_t{64} << 10) && staging_bytes <= (std::uint64_t{1} << 40), UsageError,
                  "staging_bytes must be in 64 KiB..1 TiB, got " + std::to_string(staging_bytes));
  HEADRACE_EXPECT(max_batch >= 1 && max_batch <= 65536, UsageError, "max_batch must be in 1..65536, got " + std::to_string(max_batch));
  HEADRACE_EXPECT(max_direct_bytes >= 4096 && max_direct_bytes <= (std::uint64_t{1} << 40), UsageError,
                  "max_direct_bytes must be in 4 KiB..1 TiB, got " + std::to_string(max_direct_bytes));
  HEADRACE_EXPECT(read_ahead_bytes <= (std::uint64_t{1} << 40), UsageError,
                  "read_ahead_bytes must be in 0..1 TiB (0: no read-ahead), got " + std::to_string(read_ahead_bytes));
  HEADRACE_EXPECT(pin_budget_bytes <= (std::uint64_t{1} << 50), UsageError,
                  "pin_budget_bytes must be in 0..1 PiB (0: a quarter of the machine's memory, or of the cgroup's memory.max), got " + std::to_string(pin_budget_bytes));
  HEADRACE_EXPECT(decode_threads <= 1024, UsageError, "decode_threads must be in 0..1024 (0: one per core), got " + std::to_string(decode_threads));
  HEADRACE_EXPECT(status_history >= 1024 && status_history <= (std::uint64_t{1} << 24), UsageError,
                  "status_history must be in 1024..16777216, got " + std::to_string(status_history));
}

QueueOptions QueueOptions::from_environment() {
  using detail::environment;
  using detail::parse_bool;
  using detail::parse_unsigned;
  QueueOptions o;
  if (auto v = environment("HEADRACE_BACKEND"); v && *v != "auto") o.backend = io::parse_backend_kind(*v);
  if (auto v = environment("HEADRACE_CACHE_POLICY")) o.cache_policy = io::parse_cache_policy(*v);
  if (auto v = environment("HEADRACE_PIN_FILES")) o.pin_files = staging::parse_pin_policy(*v);
  if (auto v = environment("HEADRACE_PIN_BUDGET_BYTES")) o.pin_budget_bytes = parse_unsigned("HEADRACE_PIN_BUDGET_BYTES", *v);
  if (auto v = environment("HEADRACE_STAGING_BYTES")) o.staging_bytes = parse_unsigned("HEADRACE_STAGING_BYTES", *v);
  if (auto v = environment("HEADRACE_MAX_BATCH"))
    o.max_batch = static_cast<unsigned>(std::min<std::uint64_t>(parse_unsigned("HEADRACE_MAX_BATCH", *v), ~0u));
  if (auto v = environment("HEADRACE_DECODE_THREADS"))
    o.decode_threads = static_cast<unsigned>(std::min<std::uint64_t>(parse_unsigned("HEADRACE_DECODE_THREADS", *v), ~0u));
  if (auto v = environment("HEADRACE_VERIFY_CHECKSUMS")) o.verify_checksums = parse_bool("HEADRACE_VERIFY_CHECKSUMS", *v);
  if (auto v = environment("HEADRACE_CHECK_ON")) o.check_on_gpu = detail::parse_name(check_on_names, *v, "HEADRACE_CHECK_ON");
  if (auto v = environment("HEADRACE_STAGING_HUGE_PAGES")) o.staging_huge_pages = parse_bool("HEADRACE_STAGING_HUGE_PAGES", *v);
  if (auto v = environment("HEADRACE_STRICT")) o.strict = parse_bool("HEADRACE_STRICT", *v);
  if (auto v = environment("HEADRACE_STATUS_HISTORY")) o.status_history = parse_unsigned("HEADRACE_STATUS_HISTORY", *v);
  if (auto v = environment("HEADRACE_MAX_DIRECT_BYTES")) o.max_direct_bytes = parse_unsigned("HEADRACE_MAX_DIRECT_BYTES", *v);
  if (auto v = environment("HEADRACE_READ_AHEAD_BYTES")) o.read_ahead_bytes = parse_unsigned("HEADRACE_READ_AHEAD_BYTES", *v);
  if (auto v = environment("HEADRACE_DECODE_ON")) o.decode_on_gpu = detail::parse_name(decode_on_names, *v, "HEADRACE_DECODE_ON");
  if (auto v = environment("HEADRACE_STREAM_VALUE_FENCES"))
    o.stream_value_fences = parse_bool("HEADRACE_STREAM_VALUE_FENCES", *v);
  o.validate();
  return o;
}

Queue::Impl::Impl(QueueOptions options)
    : options_(validated(std::move(options))),
      book_(options_.status_history, [this](FenceId id, Book::Fence& fence) { record_fence_locked(id, fence); },
            lanes) {
  const bool cufile = options_.cufile();
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
                    "stream_value_fences needs decode_on = cpu: nvCOMP may load kernels while a consumer "
                    "stream waits on a fence, which deadlocks");
    memory_operations_ = options_.stream_value_fences;
    device_scratch_.emplace(align_up(options_.staging_bytes));
    // A decoder call takes a flight's chunks, as blocks (at most a chunk each, at least 4 KiB each).
    decoders_.emplace(options_.device, 2,
                      codec::gpu::BatchedDecoderLimits{max_decode_items, max_decode_chunk_bytes, decoder_total_bytes});
    for (auto& lane : decode_lanes_) lane.emplace();
    if (options_.check_on_gpu && options_.verify_checksums) {
      try {
        hasher_.emplace(options_.device);
        hash_stream_.emplace();
        for (auto& sets : gpu_checks_)
          for (auto& checks : sets) checks.emplace();
      } catch (const UnavailableError& why) {
        HEADRACE_EXPECT(!options_.strict, UnavailableError, std::string("check_on=gpu: ") + why.what());
        hasher_.reset();
        note_fallback_locked(std::string("checks on the host: ") + why.what());
      }
    }
  }
  if (cufile) {
    HEADRACE_EXPECT(device_.has_value(), UsageError, "cuFile reads need a queue made for a GPU (device >= 0)");
    const std::string why = io::cufile_unavailable_reason();
    HEADRACE_EXPECT(why.empty(), UnavailableError, "cuFile unavailable: " + why);
  }
  HEADRACE_EXPECT(options_.pin_files != PinPolicy::on || device_.has_value(), UsageError,
                  "pin_files page-locks files for GPU copies: it needs a queue made for a GPU (device >= 0)");
  staging::PinnedFilesOptions pins{options_.pin_files, options_.pin_budget_bytes, device_.has_value(), std::nullopt,
                                   options_.strict, staging::local_processes()};
  if (options_.backend) pins.forced_backend = io::to_string(*options_.backend);  // cufile reads, never DMA from pages
  pinned_files_.emplace(std::move(pins));
  rings_[disk_lane].emplace(options_.staging_bytes, device_.has_value(), options_.staging_huge_pages);
  rings_[cache_lane].emplace(options_.page_cache_staging_bytes(), device_.has_value(), options_.staging_huge_pages);
  dispatcher_ = std::thread([this] {
    detail::name_this_thread(detail::dispatcher_thread_name);
    use_context();  // the dispatcher's first staging region allocates the (pinned) ring
    dispatch_loop();
  });
  for (const Lane lane : {disk_lane, cache_lane}) {
    finishers_[lane] = std::thread([this, lane] {
      detail::name_this_thread(detail::finisher_thread_name);
      use_context();
      finish_loop(lane);
    });
  }
  if (device_) completer_ = std::thread([this] {
    detail::name_this_thread(detail::completer_thread_name);
    use_context();
    complete_loop();
  });
}

Queue::Impl::~Impl() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    ++dispatch_events_;
  }
  work_.notify_all();
  dispatcher_.join();
  {
    std::lock_guard lock(mutex_);
    dispatcher_done_ = true;
  }
  flights_changed_.notify_all();
  for (auto& finisher : finishers_) finisher.join();
  {
    std::lock_guard lock(mutex_);
    finishers_done_ = true;
  }
  completions_changed_.notify_all();
  if (completer_.joinable()) completer_.join();
  if (stream_) {
    use_context();
    for (auto& lane : decode_lanes_)
      if (lane) lane->stream.synchronize();
    stream_->synchronize();  // nothing on the GPU reads staging or fence memory now
  }
}

// Checked before any member is made from them (the checker's pool, staging).
QueueOptions Queue::Impl::validated(QueueOptions options) {
  options.validate();
  return options;
}

FileId Queue::Impl::add_file(const std::string& path, const FileOptions& file_options) {
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
  file.cache_policy = file_options.cache_policy.value_or(options_.cache_policy);
  if (file.cache_policy != options_.cache_policy) file.route_note = file_options.why;
  io::ReadPathOptions reads{options_.read_path_backend(), file.cache_policy, options_.io, options_.strict};
  reads.read_ahead_bytes = options_.read_ahead_bytes;
  file.reads = std::make_unique<io::FileReadPath>(path, reads);
  if (options_.cufile())
    file.cufile = std::make_unique<io::CufileBackend>(path, options_.io, device_->context());
  FileId id = 0;
  {
    std::lock_guard lock(mutex_);
    if (!file.reads->fallback().empty()) note_fallback_locked(file.reads->fallback());
    files_.push_back(std::move(file));
    id = static_cast<FileId>(files_.size() - 1);
  }
  pin_if_asked(id);
  return id;
}

// Unpins and closes a file no unfinished request reads; its id is never given again.
void Queue::Impl::close_file(FileId id) {
  OpenFile closed;
  {
    std::unique_lock lock(mutex_);
    HEADRACE_EXPECT(id < files_.size() && !files_[id].closed, UsageError, "no open file " + std::to_string(id));
    // A stream handed out its last frame once the frame's copies were issued; they end on their own.
    fences_changed_.wait(lock, [&] { return !book_.copying_from(id); });
    book_.expect_unread(id, files_[id].path);
    if (files_[id].pinned) pinned_files_->unpin(*files_[id].pinned);
    if (files_[id].held) pinned_files_->release_held(files_[id].held->size_bytes());
    closed = std::move(files_[id]);
    files_[id] = OpenFile{};
    files_[id].path = closed.path;
    files_[id].closed = true;
  }
  // Unpinning and closing take a while, so without the lock: nothing of the queue reads the file now.
  use_context();
}

std::size_t Queue::Impl::close_path(const std::string& path) {
  std::vector<FileId> open;
  {
    std::lock_guard lock(mutex_);
    for (FileId id = 0; id < files_.size(); ++id)
      if (!files_[id].closed && files_[id].path == path) open.push_back(id);
  }
  for (const FileId id : open) close_file(id);
  return open.size();
}

void Queue::Impl::note_fallback_locked(const std::string& fallback) const {
  if (std::find(fallbacks_.begin(), fallbacks_.end(), fallback) == fallbacks_.end()) fallbacks_.push_back(fallback);
}

// Page-locks the file when pin_files asks for it (staging/pinned_files.hpp decides), without the lock;
// else holds what the disk lane reads of it, where that may pay (hold_if_it_fits).
void Queue::Impl::pin_if_asked(FileId id) {
  std::string path;
  const io::PageCacheResidency* residency = nullptr;
  io::CachePolicy policy = io::CachePolicy::auto_;
  {
    std::lock_guard lock(mutex_);
    const OpenFile& file = files_[id];
    if (file.pinned || file.held) return;
    path = file.path;
    residency = file.reads->residency();
    policy = file.cache_policy;
  }
  use_context();
  staging::PinnedFiles::Outcome outcome = pinned_files_->pin(path, residency);
  std::unique_ptr<staging::HeldCopy> held;
  if (!outcome.file && outcome.fallback.empty() && residency != nullptr) held = hold_if_it_fits(path, residency->file_size(), policy, outcome.note);
  std::lock_guard lock(mutex_);
  OpenFile& file = files_[id];
  file.pin_note = std::move(outcome.note);
  if (!outcome.fallback.empty()) note_fallback_locked(outcome.fallback);
  file.pinned = std::move(outcome.file);
  file.held = std::move(held);
}

// Locking faults in and locks every page (0.1 s or more a GB), on a thread of its own, once the copy is
// nearly whole (finish.cpp) or a request asks again for bytes it holds: locked from the start of the
// first pass, the copy held that pass to 0.72 x the disk's rate (1.42 to 1.53 GB/s against 1.95 to 2.13
// without a copy, docs/results.md), locked at its end it costs nothing there.
void Queue::Impl::start_locking_locked(OpenFile& file) {
  // One lock at a time; a trigger during one is met by the next (fills and reads go on).
  if (!file.held || file.held->refused() ||
      (file.locking.valid() && file.locking.wait_for(std::chrono::seconds(0)) != std::future_status::ready))
    return;
  file.locking = std::async(std::launch::async, [this, copy = file.held.get(), path = file.path] {
    detail::name_this_thread(detail::holder_thread_name);
    use_context();
    try {
      copy->lock();
    } catch (const Error& error) {
      std::lock_guard lock(mutex_);
      note_fallback_locked(path + ": not held (" + error.what() + "): later passes read it again");
    }
  });
}

// A GPU queue with the default policies keeps what O_DIRECT reads of a file, so that later passes are
// DMA'd from memory: only a file within the pin budget and within half of the memory the machine (or the
// cgroup) has available now, so that holding it never presses others' pages out. note: what was
// decided (the pin's note beside it).
std::unique_ptr<staging::HeldCopy> Queue::Impl::hold_if_it_fits(const std::string& path, std::uint64_t size, io::CachePolicy policy,
                                                              std::string& note) {
  if (!device_ || size == 0) return nullptr;
  if (policy != io::CachePolicy::auto_ || options_.cufile()) {
    note += options_.cufile() ? "; not held (cuFile reads it)"
                              : std::string("; not held (cache_policy ") + io::to_string(policy) + ")";
    return nullptr;
  }
  const std::uint64_t available = io::memory_for_page_cache();
  if (size > available / 2) {
    note += "; not held (" + std::to_string(size >> 20) + " MiB, more than half of the " + std::to_string(available >> 20) +
            " MiB of memory available)";
    return nullptr;
  }
  if (std::string why; !pinned_files_->reserve_held(size, why)) {
    note += "; " + why;
    return nullptr;
  }
  try {
    auto held = std::make_unique<staging::HeldCopy>(size, path);
    note += "; held (what the disk lane reads is kept in " + std::to_string(size >> 20) + " MiB of page-locked memory for later passes)";
    return held;
  } catch (const Error& error) {
    pinned_files_->release_held(size);
    note += std::string("; not held (") + error.what() + ")";
    return nullptr;
  }
}

Route Queue::Impl::route_of(const Request& r, bool compressed) const {
  if (r.destination.kind == MemoryKind::host) return compressed ? Route::host_decode : Route::direct;
  if (options_.cufile() && !compressed) return Route::cufile_copy;
  if (!compressed) return Route::device_copy;
  return options_.decode_on_gpu ? Route::device_decode : Route::device_cpu_decode;
}

RouteExplanation Queue::Impl::explain(const Request& request) {
  const codec::Chain& resolved = codec::chunk_chain(request.coding, "offset " + std::to_string(request.offset));
  const codec::Chain* chain = resolved.empty() ? nullptr : &resolved;
  const Route route = route_of(request, chain != nullptr);
  const bool device = request.destination.kind == MemoryKind::device;
  HEADRACE_EXPECT(!device || device_.has_value(), UsageError, "a GPU destination needs a queue made for a GPU (device >= 0)");
  std::string no_decoder;
  if (device && route == Route::device_decode) {
    use_context();
    no_decoder = decoders_->prepare(*chain->codec());
  }
  RouteExplanation e;
  std::lock_guard lock(mutex_);
  HEADRACE_EXPECT(request.file < files_.size() && !files_[request.file].closed, UsageError,
                  "explain: no open file " + std::to_string(request.file));
  const OpenFile& file = files_[request.file];
  const bool held = device && route != Route::cufile_copy && !file.pinned && file.held &&
                    file.held->held_until(request.offset, request.stored_size).has_value();
  const bool pinned = (device && route != Route::cufile_copy && file.pinned != nullptr) || held;
  if (held) {
    e = {"held", "DMA from the copy the engine kept when it read these bytes from the disk (no read)"};
  } else if (pinned) {
    e = {"pinned", "DMA from the file's page-locked pages (no read)"};
  } else if (route == Route::cufile_copy) {
    const auto driver = io::CufileDriver::shared();
    e = {"cufile", std::string("cuFile into GPU memory, ") + shim::to_string(driver->mode()) + " mode (" + driver->mode_reason() + ")"};
  } else {
    switch (file.reads->route(request.offset, request.stored_size)) {
      case io::ReadRoute::cached: e = {"page-cache", "buffered read of cached pages (memory speed)"}; break;
      case io::ReadRoute::direct:
        e = {"disk", file.reads->fallback().empty()
                         ? "O_DIRECT from the disk (io_uring, " + std::to_string(options_.io.queue_depth) + " reads in flight)"
                         : "O_DIRECT from the disk (" + file.reads->fallback() + ")"};
        break;
      case io::ReadRoute::kept: e = {"kept", "buffered from the disk, read ahead and kept in the page cache"}; break;
      case io::ReadRoute::forced_buffered:
      case io::ReadRoute::forced_direct:
        e = {"forced", "the forced backend " + std::string(io::to_string(*options_.read_path_backend()))};
        break;
    }
  }
  const std::string codec = chain != nullptr ? chain->spec() : "";
  switch (route) {
    case Route::direct: e.transfer = "host", e.transfer_detail = "read straight into host memory"; break;
    case Route::host_decode: e.transfer = "host-decode", e.transfer_detail = "decoded on the CPU (" + codec + ") into host memory"; break;
    case Route::device_copy:
      e.transfer = pinned ? "dma" : "copy";
      e.transfer_detail = held     ? "copied to the GPU from the held copy"
                          : pinned ? "copied to the GPU from the file's pages"
                                   : "staged in pinned memory, then copied to the GPU";
      break;
    case Route::device_decode:
      e.transfer = no_decoder.empty() ? "gpu-decode" : "unavailable";
      e.transfer_detail = no_decoder.empty() ? "copied to the GPU, decoded there by nvCOMP (" + codec + ")" : "no GPU decoder for " + codec + ": " + no_decoder;
      break;
    case Route::device_cpu_decode: e.transfer = "cpu-decode", e.transfer_detail = "decoded on the CPU (" + codec + "), then copied to the GPU"; break;
    case Route::cufile_copy: e.transfer = "cufile", e.transfer_detail = "read by cuFile straight into GPU memory"; break;
  }
  std::string why = file.pin_note;
  if (!file.route_note.empty()) why += (why.empty() ? "" : "; ") + file.route_note;
  if (!file.reads->cache_choice().empty()) why += (why.empty() ? "" : "; ") + std::string("cache ") + file.reads->cache_choice();
  if (!file.reads->fallback().empty()) why += (why.empty() ? "" : "; ") + file.reads->fallback();
  e.why = std::move(why);
  return e;
}

RequestId Queue::Impl::enqueue(Request request) {
  const std::string where = request.label.empty() ? "offset " + std::to_string(request.offset) : request.label;
  const codec::Chain& resolved = codec::chunk_chain(request.coding, where);
  const codec::Chain* chain = resolved.empty() ? nullptr : &resolved;
  const Route route = route_of(request, chain != nullptr);
  const bool on_gpu = request.destination.kind == MemoryKind::device && device_;
  // A chain's GPU decoders (and the filter kernels) are made the first time a request needs them, on the
  // caller's thread before the request is queued, never on the data path.
  std::string no_decoder, no_cpu_decoder;
  if (on_gpu && route == Route::device_decode) {
    use_context();
    no_decoder = decoders_->prepare(*chain->codec());
    if (no_decoder.empty() && !chain->filters().empty()) no_decoder = decoders_->prepare_filters();
  }
  if (chain != nullptr && route != Route::device_decode) (void)chain->cpu_decodes(&no_cpu_decoder);
  std::lock_guard lock(mutex_);
  HEADRACE_EXPECT(request.file < files_.size(), UsageError, "request for file " + std::to_string(request.file) +
                                                                ": only " + std::to_string(files_.size()) + " files added");
  const OpenFile& file = files_[request.file];
  HEADRACE_EXPECT(!file.closed, UsageError, file.path + ": file " + std::to_string(request.file) + " was closed; add it again");
  const std::string name = request.label.empty() ? file.path + ": offset " + std::to_string(request.offset) : request.label;
  HEADRACE_EXPECT(request.stored_size > 0 && request.raw_size > 0, UsageError, name + ": empty request");
  HEADRACE_EXPECT(chain != nullptr || request.stored_size == request.raw_size, UsageError,
                  name + ": an uncompressed request needs stored size == raw size");
  HEADRACE_EXPECT(request.destination.size_bytes == request.raw_size && request.destination.address != 0, UsageError,
                  name + ": destination of " + std::to_string(request.destination.size_bytes) + " bytes for " +
                      std::to_string(request.raw_size) + " raw bytes");
  const bool device = request.destination.kind == MemoryKind::device;
  HEADRACE_EXPECT(!device || device_.has_value(), UsageError,
                  name + ": a GPU destination needs a queue made for a GPU (device >= 0)");
  Plan plan;
  plan.route = route;
  if (device && route != Route::cufile_copy) {
    if (file.pinned) {
      plan.pinned_data = file.pinned->data();
      plan.pinned_size = file.pinned->size_bytes();
    } else if (file.held) {
      if (const auto until = file.held->held_until(request.offset, request.stored_size)) {
        plan.pinned_data = file.held->data();
        plan.pinned_size = *until;  // the end of its registration: no copy crosses it
        plan.held = true;
      } else if (file.held->filled(request.offset, request.stored_size)) {
        start_locking_locked(files_[request.file]);  // read again: later ones come from the copy
      }
    }
  }
  if (route == Route::device_decode) {
    HEADRACE_EXPECT(request.checksum.has_value(), UsageError,
                    name + ": GPU decoding needs the chunk's checksum, checked on the host first (nvCOMP trusts its "
                           "input: a corrupt frame can fault the GPU); give a checksum or decode on the CPU");
    HEADRACE_EXPECT(no_decoder.empty(), UnavailableError,
                    name + ": no GPU decoder for " + chain->spec() + ": " + no_decoder);
    HEADRACE_EXPECT(request.raw_size <= max_decode_chunk_bytes, UsageError,
                    name + ": a GPU-decoded chunk holds at most " + std::to_string(max_decode_chunk_bytes) +
                        " raw bytes, got " + std::to_string(request.raw_size));
  }
  HEADRACE_EXPECT(no_cpu_decoder.empty(), UnavailableError, name + ": no CPU decoder: " + no_cpu_decoder);
  plan.chain = chain;
  const std::uint64_t region_bytes = staging_bytes_of(request, route);
  HEADRACE_EXPECT(!plan.needs_region() || region_bytes <= rings_[disk_lane]->capacity_bytes(), UsageError,
                  name + ": needs " + std::to_string(region_bytes) + " bytes of staging, more than the " +
                      std::to_string(rings_[disk_lane]->capacity_bytes()) + " there are");
  if (request.label.empty()) request.label = name;
  return book_.add(std::move(request), std::move(plan), uses_staging(route));
}

FenceId Queue::Impl::enqueue_signal() {
  std::lock_guard lock(mutex_);
  std::unique_ptr<gpu::Event> event;
  if (device_) {
    use_context();
    event = std::make_unique<gpu::Event>();
  }
  const FenceId id = book_.add_fence(std::move(event));
  if (book_.fence(id).signaled) fences_changed_.notify_all();
  return id;
}

// With the lock held (the book calls it): every earlier request of this fence is issued (or finished).
void Queue::Impl::record_fence_locked(FenceId id, Book::Fence& fence) {
  if (device_) {
    use_context();
    // The fence's requests may decode on the decode lanes: the copy stream waits for both lanes' last
    // batches (those issued so far, the fence's among them) before it marks the fence.
    for (const auto& lane : decode_lanes_)
      if (lane)
        gpu::check(gpu::driver()->cuStreamWaitEvent(stream_->handle(), lane->tail.handle(), 0), "cuStreamWaitEvent");
    fence.mark->record(stream_->handle());
    gpu::check(gpu::driver()->cuStreamWriteValue32(stream_->handle(), fence_word(id), fence_generation(id),
                                                   gpu::stream_write_value_default),
               "cuStreamWriteValue32");
  }
  fences_changed_.notify_all();
}

void Queue::Impl::submit() {
  // Where each request's bytes are is asked without the lock: mincore takes milliseconds over a large
  // frame (11 ms a GB), and the finishers and the completer need the lock meanwhile. A file's read
  // path outlives its enqueued requests (close_file refuses while they wait).
  struct Ask {
    RequestId id;
    const io::FileReadPath* reads;
    std::uint64_t offset, size;
    std::optional<io::ReadRoute> route;
  };
  std::vector<Ask> asks;
  {
    std::lock_guard lock(mutex_);
    for (const RequestId id : book_.unsubmitted()) {
      const Entry& entry = book_.entry(id);
      if (!entry.plan.uses_read_path()) continue;
      asks.push_back({id, files_[entry.request.file].reads.get(), entry.request.offset, entry.request.stored_size, {}});
    }
  }
  for (Ask& ask : asks) ask.route = ask.reads->route(ask.offset, ask.size);
  {
    std::lock_guard lock(mutex_);
    std::size_t next = 0;  // asks are in the book's order; requests enqueued since are asked now
    book_.submit([&](RequestId id, Entry& entry) -> std::size_t {
      while (next < asks.size() && asks[next].id < id) ++next;
      return plan_lane_locked(entry, next < asks.size() && asks[next].id == id ? asks[next].route : std::nullopt);
    });
    ++dispatch_events_;
  }
  work_.notify_all();
}

bool Queue::Impl::cancel(RequestId id) {
  std::lock_guard lock(mutex_);
  (void)book_.known(id);
  const bool cancelled = book_.cancel(id);
  fences_changed_.notify_all();
  return cancelled;
}

std::size_t Queue::Impl::cancel_tag(std::uint64_t tag) {
  std::lock_guard lock(mutex_);
  const std::size_t cancelled = book_.cancel_tag(tag);
  fences_changed_.notify_all();
  return cancelled;
}

RequestStatus Queue::Impl::status(RequestId id) const {
  std::lock_guard lock(mutex_);
  return book_.known(id).status;
}

RequestSummary Queue::Impl::summarize(std::span<const RequestId> ids) const {
  std::lock_guard lock(mutex_);
  return book_.summarize(ids);
}

// A retired fence had fired (fences retire in order, once signalled): nothing is left to wait for.
bool Queue::Impl::is_signaled(FenceId fence) const {
  std::lock_guard lock(mutex_);
  return book_.signaled(fence);
}

void Queue::Impl::wait(FenceId fence) const {
  std::unique_lock lock(mutex_);
  fences_changed_.wait(lock, [&] { return book_.signaled(fence); });
}

std::uintptr_t Queue::Impl::fence_event(FenceId fence) const {
  std::unique_lock lock(mutex_);
  HEADRACE_EXPECT(device_.has_value(), UsageError, "fence events need a queue made for a GPU");
  HEADRACE_EXPECT(!book_.retired_fence(fence), UsageError,
                  "fence " + std::to_string(fence) + " fired long ago and was retired with its event; it needs no wait");
  (void)book_.fence(fence);
  fences_changed_.wait(lock, [&] { return book_.fence(fence).recorded; });
  return reinterpret_cast<std::uintptr_t>(book_.fence(fence).mark->handle());
}

void Queue::Impl::wait_on_stream(FenceId fence, std::uintptr_t stream) const {
  HEADRACE_EXPECT(device_.has_value(), UsageError, "waiting on a stream needs a queue made for a GPU");
  const auto consumer = reinterpret_cast<gpu::CUstream>(stream);
  use_context();
  {
    std::lock_guard lock(mutex_);
    if (book_.retired_fence(fence)) return;  // its GPU work has completed
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
    // Without memory operations the host must wait for the event's record: never before a submit.
    HEADRACE_EXPECT(book_.fence(fence).recorded || !book_.unsubmitted_before(book_.fence(fence).limit), UsageError,
                    "wait_on_stream before submit() needs a queue made with stream_value_fences: submit first");
  }
  gpu::check(gpu::driver()->cuStreamWaitEvent(consumer, reinterpret_cast<gpu::CUevent>(fence_event(fence)), 0),
             "cuStreamWaitEvent");
}

// Every request is finished or still waits for submit(): counts, not a scan of the history.
void Queue::Impl::drain() const {
  std::unique_lock lock(mutex_);
  fences_changed_.wait(lock, [&] { return book_.drained(); });
}

QueueStats Queue::Impl::stats() const {
  std::lock_guard lock(mutex_);
  QueueStats result = stats_;
  result.requests = book_.totals();
  result.checksums_checked = checker_.checksums_checked();
  result.mean_reads_in_flight = stats_.busy_seconds > 0 ? depth_seconds_ / stats_.busy_seconds : 0;
  result.retained_requests = book_.retained();
  return result;
}

std::uint64_t Queue::Impl::pinned_host_bytes() const {
  std::lock_guard lock(mutex_);
  std::uint64_t staging = 0;
  for (const auto& ring : rings_) staging += ring->pinned() ? ring->allocated_bytes() : 0;
  return staging + pinned_files_->locked_bytes();
}

std::uint64_t Queue::Impl::device_bytes() const {
  return (device_scratch_ ? device_scratch_->size_bytes() : 0) + (fence_memory_ ? fence_memory_->size_bytes() : 0);
}

std::string Queue::Impl::describe() const {
  std::lock_guard lock(mutex_);
  std::string text = "queue read-path=";
  if (const auto forced = options_.read_path_backend()) {
    text += std::string(io::to_string(*forced)) + " (forced)";
  } else {
    text += std::string("auto cache=") + io::to_string(options_.cache_policy) +
            " (cached: posix threads=" + std::to_string(options_.io.threads) + ", uncached: " +
            (options_.cache_policy == io::CachePolicy::use ? "posix" : "uring O_DIRECT qd=" + std::to_string(options_.io.queue_depth)) + ")";
  }
  text += " staging=" + std::to_string(options_.staging_bytes >> 20) + "MiB " + rings_[disk_lane]->memory_description() + " (+" +
          std::to_string(rings_[cache_lane]->capacity_bytes() >> 20) + "MiB for page-cache reads) batch=" +
          std::to_string(options_.max_batch);
  if (device_) {
    text += " gpu=" + std::to_string(options_.device);
    if (options_.cufile()) {
      const auto driver = io::CufileDriver::shared();
      text += std::string(" cufile=") + shim::to_string(driver->mode()) + " (" + driver->mode_reason() + ")";
    }
    text += " " + pinned_files_->describe();
    text += std::string(" fences=") + (memory_operations_ ? "stream-value" : "event");
    text += std::string(" decode=") + (options_.decode_on_gpu ? "gpu (nvCOMP)" : "cpu");
  } else {
    text += " destinations=host";
  }
  if (!options_.verify_checksums) text += " checksums=off";
  else if (hasher_) text += " checksums=gpu";
  // Per file, at most a few: a long series of files is summed up.
  constexpr std::size_t listed_files = 4;
  for (std::size_t f = 0; f < files_.size() && f < listed_files; ++f) {
    const OpenFile& file = files_[f];
    if (file.closed) continue;
    text += "; " + file.path + ": " + file.pin_note;
    if (file.pinned) text += " in " + std::to_string(file.pinned->register_seconds()) + " s";
    if (file.held)
      text += " (" + std::to_string(file.held->filled_bytes() >> 20) + " MiB held" +
              (file.held->locked_bytes() > 0 ? ", " + std::to_string(file.held->locked_bytes() >> 20) + " MiB locked in " +
                                                   std::to_string(file.held->lock_seconds()) + " s)"
               : file.locking.valid()        ? ", locking)"
                                             : ", locked once nearly whole or read again)");
    if (!file.route_note.empty()) text += ", " + file.route_note;
    if (!file.reads->cache_choice().empty()) text += ", cache " + file.reads->cache_choice();
  }
  if (files_.size() > listed_files) text += "; and " + std::to_string(files_.size() - listed_files) + " more files";
  for (const std::string& fallback : fallbacks_) text += "; fallback: " + fallback;
  return text;
}

std::vector<std::string> Queue::Impl::fallbacks() const {
  std::lock_guard lock(mutex_);
  return fallbacks_;
}

void Queue::Impl::stamp_flight_locked(std::uint64_t number, double FlightRecord::*stage, Clock::time_point at) {
  static constexpr double FlightRecord::*stages[] = {&FlightRecord::taken_s, &FlightRecord::landed_s, &FlightRecord::checked_s,
                                                     &FlightRecord::issued_s, &FlightRecord::done_s};
  FlightRecord& record = timeline_[number % flight_timeline_capacity];
  if (record.number != number) return;
  const double seconds = detail::seconds_between(made_at_, at);
  bool reached = false;
  for (const auto later : stages) {
    reached = reached || later == stage;
    if (reached) record.*later = seconds;
  }
}

std::vector<FlightRecord> Queue::Impl::flight_timeline() const {
  std::lock_guard lock(mutex_);
  const std::uint64_t kept = std::min<std::uint64_t>(flights_sent_, flight_timeline_capacity);
  std::vector<FlightRecord> records;
  records.reserve(kept);
  for (std::uint64_t number = flights_sent_ - kept; number < flights_sent_; ++number)
    records.push_back(timeline_[number % flight_timeline_capacity]);
  return records;
}

void Queue::Impl::release_region_locked(Entry& entry) {
  if (!entry.plan.region) return;
  rings_[entry.plan.lane]->release(*entry.plan.region);
  entry.plan.region.reset();
  room_freed_locked();
}

void Queue::Impl::room_freed_locked() {
  ++dispatch_events_;
  if (dispatcher_stalled_) work_.notify_all();  // a wake-up only when it waits for room: releases are many
}

void Queue::Impl::finish_locked(RequestId id, RequestState state, std::string message, std::exception_ptr error) {
  release_region_locked(book_.entry(id));
  book_.finish(id, state, std::move(message), std::move(error));
  fences_changed_.notify_all();
}

void Queue::Impl::fail_locked(RequestId id, std::exception_ptr error) {
  std::string message = message_of(error);  // before error moves: arguments have no order
  finish_locked(id, RequestState::failed, std::move(message), std::move(error));
}

void Queue::Impl::account_depth_locked() {
  const auto now = Clock::now();
  if (reads_in_flight_ > 0) {
    const double seconds = detail::seconds_between(depth_changed_at_, now);
    depth_seconds_ += seconds * reads_in_flight_;
    stats_.busy_seconds += seconds;
  }
  depth_changed_at_ = now;
}

Queue::Queue(QueueOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Queue::~Queue() noexcept = default;
FileId Queue::add_file(const std::string& path, const FileOptions& file_options) { return impl_->add_file(path, file_options); }
void Queue::close_file(FileId file) { impl_->close_file(file); }
std::size_t Queue::close_path(const std::string& path) { return impl_->close_path(path); }
RequestId Queue::enqueue(Request request) { return impl_->enqueue(std::move(request)); }
FenceId Queue::enqueue_signal() { return impl_->enqueue_signal(); }
void Queue::submit() { impl_->submit(); }
bool Queue::cancel(RequestId id) { return impl_->cancel(id); }
std::size_t Queue::cancel_tag(std::uint64_t tag) { return impl_->cancel_tag(tag); }
RequestStatus Queue::status(RequestId id) const { return impl_->status(id); }
RequestSummary Queue::summarize(std::span<const RequestId> ids) const { return impl_->summarize(ids); }
RouteExplanation Queue::explain(const Request& request) const { return impl_->explain(request); }
bool Queue::is_signaled(FenceId fence) const { return impl_->is_signaled(fence); }
void Queue::wait(FenceId fence) const { impl_->wait(fence); }
std::uintptr_t Queue::fence_event(FenceId fence) const { return impl_->fence_event(fence); }
void Queue::wait_on_stream(FenceId fence, std::uintptr_t stream) const { impl_->wait_on_stream(fence, stream); }
void Queue::drain() const { impl_->drain(); }
QueueStats Queue::stats() const { return impl_->stats(); }
std::vector<FlightRecord> Queue::flight_timeline() const { return impl_->flight_timeline(); }
bool Queue::has_gpu() const noexcept { return impl_->has_gpu(); }
bool Queue::decodes_on_gpu() const noexcept { return impl_->options().decode_on_gpu; }
std::uint64_t Queue::status_history() const noexcept { return impl_->options().status_history; }
std::uintptr_t Queue::copy_stream() const noexcept { return impl_->copy_stream(); }
void Queue::make_current() const { impl_->make_current(); }
std::string Queue::describe() const { return impl_->describe(); }
std::vector<std::string> Queue::fallbacks() const { return impl_->fallbacks(); }
std::uint64_t Queue::pinned_host_bytes() const { return impl_->pinned_host_bytes(); }
std::uint64_t Queue::device_bytes() const { return impl_->device_bytes(); }

}  // namespace headrace::engine
