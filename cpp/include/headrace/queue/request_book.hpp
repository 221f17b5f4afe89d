// The queue's bookkeeping: requests by id with their states, the submitted ones in priority order,
// fences over growing prefixes of the ids, cancellation, and a bounded history. No I/O, no GPU: the
// engine (engine/queue.hpp) moves requests through it under its own lock and hangs what it needs for
// a request's journey (its Plan: route, staging region) and a fence's mark (a CUDA event) on them.
//
// Ids stay valid while memory stays bounded: statuses of finished requests retire past
// status_history, fences after retained_fences newer ones; a retired fence had fired. Every walk
// starts at the oldest request (or fence) still open, so a long-lived queue pays nothing for its past.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "headrace/detail/seconds.hpp"
#include "headrace/error.hpp"
#include "headrace/queue/request.hpp"

namespace headrace::queue {

// Totals over every finished request (QueueStats reports them).
struct RequestTotals {
  std::uint64_t done = 0, failed = 0, cancelled = 0;
  std::uint64_t stored_bytes = 0, raw_bytes = 0;  // of done requests
  std::uint64_t bytes_from_cache = 0, bytes_from_disk = 0, bytes_pinned = 0;
  std::uint64_t bytes_held = 0;  // of bytes_pinned: DMA'd from the engine's held copies
};

// A set of requests (a frame, a batch) summed up: what a consumer reports per unit of work.
struct RequestSummary {
  std::uint64_t requests = 0, done = 0, failed = 0, cancelled = 0, unfinished = 0;
  std::string first_failure;  // the message of the first failed (or cancelled) request, in the order asked
  std::exception_ptr first_error;  // the error of the first failed request, as thrown (null: none failed)
  std::uint64_t stored_bytes = 0, raw_bytes = 0;  // of the done ones
  // Stored bytes of the done ones by source: memory (buffered reads of the page cache, page-locked pages,
  // held copies) or the disk; of memory's, those DMA'd from page-locked pages or held copies, and of those,
  // from held copies.
  std::uint64_t bytes_from_cache = 0, bytes_from_disk = 0, bytes_pinned = 0, bytes_other = 0;
  std::uint64_t bytes_held = 0;
  double queue_wait_s = 0, io_s = 0, transfer_s = 0, h2d_s = 0, decode_s = 0;  // summed
};

// Adds bytes to the counter of their source: memory (the page cache; pinned pages and held copies count there
// too), the disk, or other.
inline void count_source(ReadSource source, std::uint64_t bytes, std::uint64_t& cache, std::uint64_t& disk,
                         std::uint64_t& pinned, std::uint64_t& held, std::uint64_t& other) {
  switch (source) {
    case ReadSource::page_cache: cache += bytes; break;
    case ReadSource::pinned: cache += bytes; pinned += bytes; break;
    case ReadSource::held: cache += bytes; pinned += bytes; held += bytes; break;
    case ReadSource::disk: disk += bytes; break;
    default: other += bytes;
  }
}

// Not thread-safe: the owner calls it under one lock. Plan: what the owner keeps per request;
// FenceMark: per fence (both default-constructible).
template <class Plan, class FenceMark>
class RequestBook {
 public:
  using Clock = detail::SteadyClock;
  static constexpr std::size_t retained_fences = 1024;  // fired fences kept before the oldest is retired

  struct Entry {
    Request request;
    RequestStatus status;
    Plan plan;
    // Read into the owner's memory (staging), not the destination: a cancel after its read still
    // keeps the destination untouched (the owner drops it instead of finishing it).
    bool cancellable_after_read = false;
    bool cancel_requested = false;
    bool issued = false;  // will do no more GPU work (finished ones too)
    bool listed = false;  // in the unsubmitted or pending list: not retired before they drop it
    Clock::time_point submitted_at, dispatched_at, read_at;
  };

  struct Fence {
    RequestId limit = 0;           // covers requests with id < limit
    std::uint64_t unfinished = 0;  // of those
    std::uint64_t unissued = 0;    // of those, not yet issued to the GPU (or finished)
    bool signaled = false;
    bool recorded = false;  // the owner marked it (on_record ran)
    FenceMark mark;
  };

  // on_record(id, fence): every request a fence covers is issued: the owner marks it (records its
  // event) then. Called under the owner's lock, from add_fence, mark_issued and finish.
  // pending_lists: submitted requests wait in that many lists (the owner's lanes), each in priority order.
  RequestBook(std::uint64_t status_history, std::function<void(FenceId, Fence&)> on_record,
              std::size_t pending_lists = 1)
      : status_history_(status_history), on_record_(std::move(on_record)) {
    for (std::size_t i = 0; i < std::max<std::size_t>(pending_lists, 1); ++i) pending_.emplace_back(PendingOrder{this});
  }
  // The pending order points back at the book: it stays where it was made.
  RequestBook(const RequestBook&) = delete;
  RequestBook& operator=(const RequestBook&) = delete;

  // ---- requests ----
  [[nodiscard]] RequestId end_id() const noexcept { return first_id_ + entries_.size(); }
  [[nodiscard]] Entry& entry(RequestId id) { return entries_[id - first_id_]; }
  [[nodiscard]] const Entry& entry(RequestId id) const { return entries_[id - first_id_]; }
  // The entry of a request a caller names; UsageError for one never given or retired.
  [[nodiscard]] const Entry& known(RequestId id) const {
    HEADRACE_EXPECT(id < end_id(), UsageError, "no request " + std::to_string(id));
    HEADRACE_EXPECT(id >= first_id_, UsageError,
                    "request " + std::to_string(id) + " was retired: the queue keeps the status of its last " +
                        std::to_string(status_history_) + " requests (status_history)");
    return entry(id);
  }
  [[nodiscard]] std::size_t retained() const noexcept { return entries_.size(); }

  // Records an enqueued request; it waits for submit().
  RequestId add(Request request, Plan plan, bool cancellable_after_read) {
    retire();
    Entry e;
    e.request = std::move(request);
    e.plan = std::move(plan);
    e.cancellable_after_read = cancellable_after_read;
    e.listed = true;
    entries_.push_back(std::move(e));
    ++awaiting_submit_;
    const RequestId id = end_id() - 1;
    unsubmitted_.push_back(id);
    return id;
  }

  // Hands every enqueued (not cancelled) request to a pending list: list_of(id, entry) picks it (the
  // owner may note in the entry's plan what it learnt choosing); without list_of, the first.
  void submit(const std::function<std::size_t(RequestId, Entry&)>& list_of = {}) {
    const auto now = Clock::now();
    for (const RequestId id : unsubmitted_) {
      Entry& e = entry(id);
      if (e.status.state != RequestState::enqueued) {  // cancelled before submit: listed nowhere now
        e.listed = false;
        continue;
      }
      e.status.state = RequestState::submitted;
      e.submitted_at = now;
      --awaiting_submit_;
      pending_.at(list_of ? list_of(id, e) : 0).push(id);  // stays listed
    }
    unsubmitted_.clear();
  }

  // The enqueued requests submit() will list next, in enqueue order (some may be cancelled by then).
  [[nodiscard]] const std::vector<RequestId>& unsubmitted() const noexcept { return unsubmitted_; }

  // An enqueued request of a fence waits for submit() (the host cannot wait for its fence's event yet).
  [[nodiscard]] bool unsubmitted_before(RequestId limit) const {
    return std::any_of(unsubmitted_.begin(), unsubmitted_.end(),
                       [&](RequestId id) { return id < limit && entry(id).status.state == RequestState::enqueued; });
  }

  // The submitted requests of each list, highest priority first, equal priorities in id order.
  [[nodiscard]] bool has_pending() const noexcept {
    return std::any_of(pending_.begin(), pending_.end(), [](const auto& list) { return !list.empty(); });
  }
  [[nodiscard]] bool has_pending(std::size_t list) const { return !pending_.at(list).empty(); }
  [[nodiscard]] RequestId next_pending(std::size_t list = 0) const { return pending_.at(list).top(); }
  void pop_pending(std::size_t list = 0) {
    entry(pending_.at(list).top()).listed = false;
    pending_.at(list).pop();
  }
  // The list whose next request comes first in priority order (needs has_pending()).
  [[nodiscard]] std::size_t first_pending_list() const {
    std::size_t first = pending_.size();
    for (std::size_t list = 0; list < pending_.size(); ++list) {
      if (pending_[list].empty()) continue;
      if (first == pending_.size() || PendingOrder{this}(pending_[first].top(), pending_[list].top())) first = list;
    }
    return first;
  }

  // The owner starts the request's read.
  void dispatch(RequestId id, ReadSource source) {
    Entry& e = entry(id);
    e.status.state = RequestState::reading;
    e.status.source = source;
    e.dispatched_at = Clock::now();
    e.status.queue_wait_s = detail::seconds_between(e.submitted_at, e.dispatched_at);
  }

  // True when the request will never write its destination. One read into its destination (or one
  // already on the GPU) cannot be called back.
  bool cancel(RequestId id) {
    Entry& e = entry(id);
    switch (e.status.state) {
      case RequestState::enqueued:
      case RequestState::submitted:  // the owner drops it without reading it
        e.cancel_requested = true;
        finish(id, RequestState::cancelled, "cancelled before it was read");
        return true;
      case RequestState::reading:
        if (!e.cancellable_after_read) return false;
        e.cancel_requested = true;  // read into the owner's memory: dropped once read
        return true;
      case RequestState::copying:
      case RequestState::done:
      case RequestState::failed:
        return false;
      case RequestState::cancelled:
        return true;
    }
    return false;
  }

  // Cancels every unfinished request with this tag; returns how many will not write their destination.
  std::size_t cancel_tag(std::uint64_t tag) {
    std::size_t cancelled = 0;
    advance_oldest_open();
    for (RequestId id = oldest_open_; id < end_id(); ++id) {
      const Entry& e = entry(id);
      if (e.request.tag == tag && !e.status.finished() && cancel(id)) ++cancelled;
    }
    return cancelled;
  }

  // True while a request of `file` is past its read with its GPU work under way (it finishes on its
  // own, and may still DMA from the file's page-locked pages).
  [[nodiscard]] bool copying_from(FileId file) {
    return first_open_of(file, [](const Entry& e) { return e.status.state == RequestState::copying; }).has_value();
  }

  // Throws UsageError naming the first unfinished request that reads `file`.
  void expect_unread(FileId file, const std::string& path) {
    const auto reader = first_open_of(file, [](const Entry& e) { return !e.status.finished(); });
    HEADRACE_EXPECT(!reader, UsageError,
                    path + ": cannot be closed while request " + std::to_string(reader.value_or(0)) +
                        " reads it; cancel or wait for its requests first");
  }

  // The request is done, failed or cancelled: it counts, and the fences it closes fire.
  // A failed one carries its error as thrown.
  void finish(RequestId id, RequestState state, std::string message, std::exception_ptr error = nullptr) {
    Entry& e = entry(id);
    if (e.status.finished()) return;
    if (e.status.state == RequestState::enqueued) --awaiting_submit_;
    e.status.state = state;
    e.status.message = std::move(message);
    e.status.error = std::move(error);
    e.status.completion_index = completed_++;
    const auto now = Clock::now();
    if (state == RequestState::done) {
      e.status.transfer_s = detail::seconds_between(e.read_at, now);
      ++totals_.done;
      totals_.stored_bytes += e.request.stored_size;
      totals_.raw_bytes += e.request.raw_size;
      std::uint64_t other = 0;
      count_source(e.status.source, e.request.stored_size, totals_.bytes_from_cache, totals_.bytes_from_disk,
                   totals_.bytes_pinned, totals_.bytes_held, other);
    } else if (state == RequestState::failed) {
      ++totals_.failed;
    } else {
      ++totals_.cancelled;
    }
    mark_issued(id);
    const FenceId end = end_fence();
    while (oldest_unsignaled_ < end && fence(oldest_unsignaled_).signaled) ++oldest_unsignaled_;
    for (FenceId f = oldest_unsignaled_; f < end; ++f) {
      Fence& fc = fence(f);
      if (fc.signaled || id >= fc.limit) continue;
      if (--fc.unfinished == 0) fc.signaled = true;
    }
  }

  // The request will do no more GPU work: fences whose every request is issued are recorded.
  // Fences cover growing prefixes of the ids, so they are recorded (and signalled) in order.
  void mark_issued(RequestId id) {
    Entry& e = entry(id);
    if (e.issued) return;
    e.issued = true;
    ++issued_;
    const FenceId end = end_fence();
    while (oldest_unrecorded_ < end && fence(oldest_unrecorded_).recorded) ++oldest_unrecorded_;
    for (FenceId f = oldest_unrecorded_; f < end; ++f) {
      Fence& fc = fence(f);
      if (fc.recorded || id >= fc.limit) continue;
      if (--fc.unissued == 0) record(f);
    }
  }

  [[nodiscard]] RequestSummary summarize(std::span<const RequestId> ids) const {
    RequestSummary sum;
    for (const RequestId id : ids) {
      const Entry& e = known(id);
      const RequestStatus& s = e.status;
      ++sum.requests;
      sum.queue_wait_s += s.queue_wait_s;
      sum.io_s += s.io_s;
      sum.transfer_s += s.transfer_s;
      sum.h2d_s += s.h2d_s;
      sum.decode_s += s.decode_s;
      switch (s.state) {
        case RequestState::done:
          ++sum.done;
          sum.stored_bytes += e.request.stored_size;
          sum.raw_bytes += e.request.raw_size;
          break;
        case RequestState::failed:
        case RequestState::cancelled:
          ++(s.state == RequestState::failed ? sum.failed : sum.cancelled);
          if (sum.first_failure.empty()) sum.first_failure = s.message;
          if (!sum.first_error) sum.first_error = s.error;
          break;
        default: ++sum.unfinished;
      }
      // Read (its bytes on their way, or in place) and not failed: where they came from is known.
      if (s.source != ReadSource::none && s.state != RequestState::failed && s.state != RequestState::cancelled)
        count_source(s.source, e.request.stored_size, sum.bytes_from_cache, sum.bytes_from_disk, sum.bytes_pinned,
                     sum.bytes_held, sum.bytes_other);
    }
    return sum;
  }

  [[nodiscard]] const RequestTotals& totals() const noexcept { return totals_; }
  // Every request is finished or still waits for submit().
  [[nodiscard]] bool drained() const noexcept { return end_id() - finished_count() == awaiting_submit_; }

  // ---- fences ----
  // A fence over every request enqueued so far: counts, not a scan, so thousands of fences cost
  // nothing for the history. Fences before the oldest open one have fired: only the last
  // retained_fences are kept.
  FenceId add_fence(FenceMark mark) {
    while (fences_.size() >= retained_fences && first_fence_ < oldest_unsignaled_ && first_fence_ < oldest_unrecorded_) {
      fences_.pop_front();
      ++first_fence_;
    }
    Fence fc;
    fc.limit = end_id();
    fc.unfinished = end_id() - finished_count();
    fc.unissued = end_id() - issued_;
    fc.signaled = fc.unfinished == 0;
    fc.mark = std::move(mark);
    fences_.push_back(std::move(fc));
    const FenceId id = end_fence() - 1;
    if (fence(id).unissued == 0) record(id);
    return id;
  }
  [[nodiscard]] FenceId end_fence() const noexcept { return first_fence_ + fences_.size(); }
  // True for a fence that fired long ago and was retired; UsageError for one never given.
  [[nodiscard]] bool retired_fence(FenceId id) const {
    HEADRACE_EXPECT(id < end_fence(), UsageError, "no fence " + std::to_string(id));
    return id < first_fence_;
  }
  [[nodiscard]] Fence& fence(FenceId id) { return fences_[id - first_fence_]; }
  [[nodiscard]] const Fence& fence(FenceId id) const {
    HEADRACE_EXPECT(id >= first_fence_ && id < end_fence(), UsageError, "no fence " + std::to_string(id));
    return fences_[id - first_fence_];
  }
  [[nodiscard]] bool signaled(FenceId id) const { return retired_fence(id) || fence(id).signaled; }

 private:
  [[nodiscard]] std::uint64_t finished_count() const noexcept { return totals_.done + totals_.failed + totals_.cancelled; }

  void record(FenceId id) {
    Fence& fc = fence(id);
    if (fc.recorded) return;
    on_record_(id, fc);
    fc.recorded = true;
  }

  // Drops the oldest finished requests beyond status_history: only those no list names and whose GPU
  // work is over, at the front, so every later one keeps its id. The owner lets go of a request's
  // memory (its staging region) before it finishes it.
  void retire() {
    while (entries_.size() >= status_history_) {
      const Entry& front = entries_.front();
      if (!front.status.finished() || front.listed || !front.issued) return;
      entries_.pop_front();
      ++first_id_;
    }
  }

  // The oldest request not yet retired that reads `file` and matches `matches`.
  template <class Predicate>
  [[nodiscard]] std::optional<RequestId> first_open_of(FileId file, Predicate matches) {
    advance_oldest_open();
    for (RequestId r = oldest_open_; r < end_id(); ++r) {
      const Entry& e = entry(r);
      if (e.request.file == file && matches(e)) return r;
    }
    return std::nullopt;
  }
  void advance_oldest_open() {
    oldest_open_ = std::max(oldest_open_, first_id_);
    while (oldest_open_ < end_id() && entry(oldest_open_).status.finished()) ++oldest_open_;
  }

  struct PendingOrder {
    const RequestBook* book;
    bool operator()(RequestId a, RequestId b) const {  // true: a after b
      const int pa = book->entry(a).request.priority, pb = book->entry(b).request.priority;
      return pa != pb ? pa < pb : a > b;
    }
  };

  std::uint64_t status_history_;
  std::function<void(FenceId, Fence&)> on_record_;
  std::deque<Entry> entries_;  // entries_[0] is request first_id_: older ones are retired
  RequestId first_id_ = 0, oldest_open_ = 0;
  std::uint64_t awaiting_submit_ = 0;  // enqueued, not cancelled, not yet submitted
  std::uint64_t issued_ = 0, completed_ = 0;
  RequestTotals totals_;
  std::vector<RequestId> unsubmitted_;
  std::vector<std::priority_queue<RequestId, std::vector<RequestId>, PendingOrder>> pending_;
  std::deque<Fence> fences_;  // fences_[0] is fence first_fence_
  FenceId first_fence_ = 0, oldest_unrecorded_ = 0, oldest_unsignaled_ = 0;
};

}  // namespace headrace::queue
