#include "measure.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <latch>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "headrace/error.hpp"
#include "headrace/io/backend.hpp"
#include "splitmix.hpp"

namespace headrace::probe::detail {
namespace {

using Clock = std::chrono::steady_clock;

// Block-aligned offsets of one thread: its own region, streamed and wrapped, or uniform random.
class OffsetStream {
 public:
  OffsetStream(const PointWork& work, unsigned thread)
      : block_(work.grid.block_size_bytes),
        file_blocks_(work.file_size_bytes / block_),
        region_blocks_(file_blocks_ / work.grid.threads),
        region_first_((work.sequential_start_bytes / block_ + std::uint64_t{thread} * region_blocks_) % file_blocks_),
        pattern_(work.grid.pattern),
        random_(SplitMix64(work.seed + thread).next()) {}

  std::uint64_t next() noexcept {
    const std::uint64_t index = pattern_ == Pattern::sequential
                                    ? (region_first_ + next_in_region_++ % region_blocks_) % file_blocks_
                                    : random_.below(file_blocks_);
    return index * block_;
  }

 private:
  std::uint64_t block_;
  std::uint64_t file_blocks_;
  std::uint64_t region_blocks_;
  std::uint64_t region_first_;
  std::uint64_t next_in_region_ = 0;
  Pattern pattern_;
  SplitMix64 random_;
};

// What the threads of one point share; the coordinator (the caller's thread) owns the clock.
struct Shared {
  explicit Shared(unsigned threads) : ready(threads) {}
  std::latch ready;                      // every thread has opened its backend
  std::atomic<bool> go{false};           // the clock has started
  std::atomic<bool> stop{false};         // start no more reads
  std::atomic<bool> failed{false};       // some thread stored an error
  std::atomic<std::uint64_t> bytes_done{0};
};

struct ThreadOutcome {
  std::uint64_t reads = 0;
  Clock::time_point end{};
  std::exception_ptr error;
};

// Reads this thread starts: its share of exact_bytes (possibly none), or nullopt on the clock.
std::optional<std::uint64_t> read_quota(const PointWork& work, unsigned thread) {
  if (work.stop.exact_bytes == 0) return std::nullopt;
  const std::uint64_t block = work.grid.block_size_bytes;
  const std::uint64_t total = (work.stop.exact_bytes + block - 1) / block;
  return total / work.grid.threads + (thread < total % work.grid.threads ? 1 : 0);
}

// Keeps queue_depth one-block reads in flight: reaps whichever have completed, waits for the oldest
// only when none has, and starts a new read in each freed slot until told to stop.
class Window {
 public:
  Window(const PointWork& work, unsigned thread, io::Backend& backend)
      : work_(work),
        backend_(backend),
        offsets_(work, thread),
        quota_(read_quota(work, thread)),
        buffer_count_(buffers_per_thread(work.grid, work.buffer_limit_bytes)),
        buffers_(work.buffers + std::uint64_t{thread} * buffer_count_ * work.grid.block_size_bytes),
        batches_(work.grid.queue_depth),
        offsets_in_flight_(work.grid.queue_depth) {
    pending_.reserve(work.grid.queue_depth);
  }

  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;
  // Destinations must outlive the reads: never leave one in flight, even when unwinding.
  ~Window() noexcept {
    for (auto slot : pending_) batches_[slot]->wait();
  }

  std::uint64_t run(Shared& shared) {
    for (unsigned slot = 0; slot < work_.grid.queue_depth && may_start(shared); ++slot) start(slot);
    std::vector<unsigned> finished;
    finished.reserve(work_.grid.queue_depth);
    while (!pending_.empty()) {
      finished.clear();
      std::size_t kept = 0;
      for (auto slot : pending_) {
        if (batches_[slot]->is_done()) {
          finished.push_back(slot);
        } else {
          pending_[kept++] = slot;
        }
      }
      pending_.resize(kept);
      if (finished.empty()) {
        batches_[pending_.front()]->wait();
        continue;
      }
      for (auto slot : finished) {
        count(slot);
        shared.bytes_done.fetch_add(work_.grid.block_size_bytes, std::memory_order_relaxed);
        if (may_start(shared)) start(slot);
      }
    }
    return reads_;
  }

 private:
  bool may_start(const Shared& shared) const noexcept {
    return quota_ ? started_ < *quota_ : !shared.stop.load(std::memory_order_relaxed);
  }

  void start(unsigned slot) {
    const std::uint64_t offset = offsets_.next();
    std::byte* destination = buffers_ + std::uint64_t{slot % buffer_count_} * work_.grid.block_size_bytes;
    batches_[slot] = backend_.submit({io::ReadRequest{offset, work_.grid.block_size_bytes, destination}});
    offsets_in_flight_[slot] = offset;
    pending_.push_back(slot);
    ++started_;
  }

  void count(unsigned slot) {
    const auto& status = batches_[slot]->statuses().front();
    if (!status.ok()) throw SystemError(status.message, status.error_number);
    HEADRACE_EXPECT_DATA(status.bytes_read == work_.grid.block_size_bytes, TruncatedFileError, work_.file,
                         offsets_in_flight_[slot], std::to_string(work_.grid.block_size_bytes) + " bytes read",
                         std::to_string(status.bytes_read));
    ++reads_;
  }

  const PointWork& work_;
  io::Backend& backend_;
  OffsetStream offsets_;
  std::optional<std::uint64_t> quota_;
  unsigned buffer_count_;
  std::byte* buffers_;
  std::vector<std::shared_ptr<io::ReadBatch>> batches_;  // one per slot
  std::vector<std::uint64_t> offsets_in_flight_;          // one per slot
  std::vector<unsigned> pending_;                         // slots in flight, oldest first
  std::uint64_t started_ = 0;
  std::uint64_t reads_ = 0;
};

void run_thread(const PointWork& work, unsigned thread, Shared& shared, ThreadOutcome& outcome) noexcept {
  std::unique_ptr<io::Backend> backend;
  try {
    backend = io::open_backend(work.io_path.backend, work.file,
                               backend_options(work.io_path, work.grid.block_size_bytes, work.grid.queue_depth));
  } catch (...) {
    outcome.error = std::current_exception();
    shared.failed = true;
  }
  shared.ready.count_down();
  shared.go.wait(false);
  if (!backend) return;
  try {
    Window window(work, thread, *backend);
    outcome.reads = window.run(shared);
  } catch (...) {
    outcome.error = std::current_exception();
    shared.failed = true;
    shared.stop = true;
  }
  outcome.end = Clock::now();
}

bool clock_says_stop(const StopRule& rule, const Shared& shared, double elapsed_seconds) noexcept {
  if (elapsed_seconds < rule.seconds) return false;
  return shared.bytes_done.load(std::memory_order_relaxed) >= rule.min_bytes || elapsed_seconds >= rule.max_seconds;
}

}  // namespace

unsigned buffers_per_thread(const GridPoint& grid, std::uint64_t buffer_limit_bytes) noexcept {
  const std::uint64_t fit = buffer_limit_bytes / (std::uint64_t{grid.threads} * grid.block_size_bytes);
  return static_cast<unsigned>(std::clamp<std::uint64_t>(fit, 1, grid.queue_depth));
}

std::uint64_t buffer_bytes_needed(const GridPoint& grid, std::uint64_t buffer_limit_bytes) noexcept {
  return std::uint64_t{grid.threads} * buffers_per_thread(grid, buffer_limit_bytes) * grid.block_size_bytes;
}

ProbePoint measure_point(const PointWork& work) {
  const unsigned threads = work.grid.threads;
  Shared shared(threads);
  std::vector<ThreadOutcome> outcomes(threads);
  std::vector<std::jthread> workers;
  // Declared after workers, so it runs before they are joined: no thread is left waiting for go.
  struct ReleaseOnExit {
    Shared& shared;
    ~ReleaseOnExit() noexcept {
      shared.stop = true;
      shared.go = true;
      shared.go.notify_all();
    }
  } release{shared};
  workers.reserve(threads);
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([&work, &shared, &outcomes, t] { run_thread(work, t, shared, outcomes[t]); });
  }
  shared.ready.wait();  // backends are opened off the clock
  const auto start = Clock::now();
  shared.go = true;
  shared.go.notify_all();
  if (work.stop.exact_bytes == 0) {
    while (!shared.failed.load(std::memory_order_relaxed) &&
           !clock_says_stop(work.stop, shared, std::chrono::duration<double>(Clock::now() - start).count())) {
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    shared.stop = true;
  }
  workers.clear();  // joins

  ProbePoint point;
  point.pattern = work.grid.pattern;
  point.block_size_bytes = work.grid.block_size_bytes;
  point.queue_depth = work.grid.queue_depth;
  point.threads = threads;
  point.io_path = work.io_path;
  auto end = start;
  for (const auto& outcome : outcomes) {
    if (outcome.error) std::rethrow_exception(outcome.error);
    point.reads += outcome.reads;
    end = std::max(end, outcome.end);
  }
  point.bytes = point.reads * work.grid.block_size_bytes;
  point.seconds = std::chrono::duration<double>(end - start).count();
  derive_rates(point);
  return point;
}

}  // namespace headrace::probe::detail
