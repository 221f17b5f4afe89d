#include "headrace/engine/slot_stream.hpp"

#include <utility>

#include "headrace/error.hpp"
#include "headrace/gpu/stream.hpp"

namespace headrace::engine {

// A slot given back while a consumer stream may still read it: refilled once the event fired.
struct SlotStream::Releasing {
  std::uint32_t slot;
  std::optional<gpu::Event> after;  // recorded on the consumer stream at release
};

SlotStream::SlotStream(Queue& queue, SlotFill fill, SlotStreamOptions options)
    : queue_(queue), fill_(std::move(fill)), options_(std::move(options)) {
  HEADRACE_EXPECT(options_.slots >= 1, UsageError, "a slot stream needs at least one slot, got 0");
  if (options_.tag == 0) options_.tag = reinterpret_cast<std::uintptr_t>(this);
  if (!options_.name) options_.name = [](std::uint64_t unit) { return "unit " + std::to_string(unit); };
  for (std::uint32_t s = 0; s < options_.slots; ++s) free_.push_back(s);
}

SlotStream::~SlotStream() noexcept {
  try {
    stop();
  } catch (const Error&) {  // the queue reports its own failures per request; nothing writes a slot now
  }
}

void SlotStream::play(std::vector<std::uint64_t> order) {
  stop();
  order_.assign(order.begin(), order.end());
  fill();
}

void SlotStream::extend(std::span<const std::uint64_t> units) {
  order_.insert(order_.end(), units.begin(), units.end());
  refill();
}

std::optional<std::uint64_t> SlotStream::upcoming() const {
  if (!in_flight_.empty()) return in_flight_.front().unit;
  if (!order_.empty()) return order_.front();
  return std::nullopt;
}

std::vector<Request> SlotStream::requests_of(std::uint64_t unit, std::uint32_t slot) const {
  std::vector<Request> requests = fill_(unit, slot);
  HEADRACE_EXPECT(requests.size() <= queue_.status_history(), UsageError,
                  options_.name(unit) + " takes " + std::to_string(requests.size()) + " reads, more than the queue keeps the status of (" +
                      std::to_string(queue_.status_history()) + ", status_history): store it in larger chunks, or raise status_history");
  return requests;
}

SlotStream::Scheduled SlotStream::schedule(std::uint64_t unit, std::uint32_t slot, std::vector<Request> requests, bool fenced) {
  Scheduled scheduled{unit, slot, {}, 0, detail::SteadyClock::now()};
  for (Request& request : requests) {
    request.tag = options_.tag;
    request.priority = options_.priority;
    scheduled.requests.push_back(queue_.enqueue(std::move(request)));
  }
  if (fenced) scheduled.fence = queue_.enqueue_signal();
  return scheduled;
}

void SlotStream::fill() {
  bool scheduled = false;
  std::uint64_t reading = 0;  // requests of the units in flight, whose statuses next() still reads
  for (const Scheduled& unit : in_flight_) reading += unit.requests.size();
  while (!free_.empty() && !order_.empty()) {
    const std::uint32_t slot = free_.front();
    const std::uint64_t unit = order_.front();
    std::vector<Request> requests = requests_of(unit, slot);
    // The queue forgets the oldest statuses past status_history: a unit waits for the one before it
    // to be handed out rather than push its statuses out (huge frames of small chunks, several ahead).
    if (!in_flight_.empty() && reading + requests.size() >= queue_.status_history()) break;
    free_.pop_front();
    order_.pop_front();
    reading += requests.size();
    in_flight_.push_back(schedule(unit, slot, std::move(requests), true));
    scheduled = true;
  }
  if (scheduled) queue_.submit();  // one batch for everything scheduled now
}

void SlotStream::reclaim(bool block) {
  while (!releasing_.empty()) {
    Releasing& oldest = *releasing_.front();
    if (oldest.after && !oldest.after->query()) {
      if (!block) return;
      ++release_waits_;
      oldest.after->synchronize();
    }
    free_.push_back(oldest.slot);
    releasing_.pop_front();
    block = false;
  }
}

void SlotStream::wait_for(FenceId fence, Readiness readiness) const {
  if (readiness == Readiness::issued && queue_.has_gpu()) {
    (void)queue_.fence_event(fence);  // every read done and its GPU work issued
  } else {
    queue_.wait(fence);
  }
}

void SlotStream::expect_done(const Scheduled& unit, const RequestSummary& summary) {
  if (summary.failed == 0 && summary.cancelled == 0) return;
  const std::string context = options_.name(unit.unit) + ": " + std::to_string(summary.failed + summary.cancelled) +
                              " of " + std::to_string(summary.requests) + " reads failed; the first: ";
  // The first failure's own type: a checksum mismatch stays a ChecksumMismatchError.
  if (summary.first_error) rethrow_with_context(summary.first_error, context);
  throw Error(context + summary.first_failure);
}

std::optional<SlotDelivery> SlotStream::next(Readiness readiness) {
  // Slots whose consumer is done refill first; block only when nothing else could arrive.
  reclaim(in_flight_.empty() && !order_.empty());
  fill();
  if (in_flight_.empty()) {
    HEADRACE_EXPECT(order_.empty(), UsageError,
                    "every one of the " + std::to_string(options_.slots) +
                        " slots is held by units handed out and not released: release one before asking for the next");
    return std::nullopt;
  }
  Scheduled unit = std::move(in_flight_.front());
  in_flight_.pop_front();
  const auto waited_at = detail::SteadyClock::now();
  wait_for(unit.fence, readiness);
  const auto now = detail::SteadyClock::now();
  SlotDelivery delivery{unit.unit, unit.slot, unit.fence, std::move(unit.requests), {}, 0, 0};
  delivery.summary = queue_.summarize(delivery.requests);
  delivery.ready_seconds = detail::seconds_between(unit.submitted_at, now);
  delivery.waited_seconds = detail::seconds_between(waited_at, now);
  if (delivery.summary.failed != 0 || delivery.summary.cancelled != 0) {
    queue_.wait(unit.fence);  // nothing of it writes the slot any more
    free_.push_back(unit.slot);
    fill();
    expect_done(unit, delivery.summary);
  }
  // Consumer work that ended while this one waited frees its slot for the units after.
  refill();
  return delivery;
}

void SlotStream::release(std::uint32_t slot, std::uintptr_t consumer) {
  HEADRACE_EXPECT(slot < options_.slots, UsageError,
                  "no slot " + std::to_string(slot) + " (" + std::to_string(options_.slots) + " slots)");
  auto releasing = std::make_unique<Releasing>(Releasing{slot, std::nullopt});
  if (consumer != 0) {
    queue_.make_current();
    releasing->after.emplace();
    releasing->after->record(reinterpret_cast<gpu::CUstream>(consumer));
  }
  releasing_.push_back(std::move(releasing));
  refill();
}

void SlotStream::stop() {
  queue_.cancel_tag(options_.tag);
  while (!releasing_.empty()) reclaim(true);
  for (const Scheduled& unit : in_flight_) {
    queue_.wait(unit.fence);  // cancelled or finished: nothing writes the slot after this
    free_.push_back(unit.slot);
  }
  in_flight_.clear();
  if (!loads_.empty()) queue_.wait(queue_.enqueue_signal());  // loads carry no fence of their own
  loads_.clear();
  order_.clear();
}

void SlotStream::refill() {
  reclaim(false);
  fill();
}

void SlotStream::settle() {
  refill();
  if (!in_flight_.empty()) queue_.wait(in_flight_.back().fence);  // a fence covers every request before it
}

void SlotStream::load(std::uint64_t unit, std::uint32_t slot) {
  HEADRACE_EXPECT(slot < options_.slots, UsageError,
                  "no slot " + std::to_string(slot) + " (" + std::to_string(options_.slots) + " slots)");
  loads_.push_back(schedule(unit, slot, requests_of(unit, slot), false));  // wait_loaded() fences them all at once
}

FenceId SlotStream::wait_loaded(Readiness readiness) {
  const FenceId fence = queue_.enqueue_signal();
  queue_.submit();
  std::vector<Scheduled> loads = std::move(loads_);
  loads_.clear();
  wait_for(fence, readiness);
  for (const Scheduled& unit : loads) {
    const RequestSummary summary = queue_.summarize(unit.requests);
    if (summary.failed != 0 || summary.cancelled != 0) {
      queue_.wait(fence);
      expect_done(unit, summary);
    }
  }
  return fence;
}

}  // namespace headrace::engine
