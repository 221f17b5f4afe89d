// The one streaming schedule every workload shares: N destination slots (host or GPU memory) filled
// through an engine queue with units of work, a fence each, delivered in order, released and refilled,
// looking ahead as far as the slots allow. A workload only declares what a slot holds for a unit
// (SlotFill: the requests, destinations inside the slot); frames of a series (FrameStream), batches of
// particles in segments (the segmented renderer), velocity units of a resident cache (the tracer).
//
//   play(order)         the units to deliver, in order (a seek: what is in flight is cancelled)
//   extend(units)       more units after those (the next frame's batches, loaded while this one is used)
//   next()              the next unit, once its bytes are in place (host) or its GPU work is issued
//   release(slot, s)    the slot may be refilled once CUDA stream s is past this point
//   settle()            wait for what is in flight without handing it out (look-ahead within a caller's time)
//   refill()            refill the slots whose consumer is done, without waiting (look-ahead past the caller's return)
//   load(unit, slot)    fill one given slot now (a cache picks its slots itself), then wait_loaded()
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "headrace/detail/seconds.hpp"
#include "headrace/engine/queue.hpp"

namespace headrace::engine {

// The requests that put `unit` into `slot`; every destination lies in that slot's memory.
using SlotFill = std::function<std::vector<Request>(std::uint64_t unit, std::uint32_t slot)>;

struct SlotStreamOptions {
  std::uint32_t slots = 3;
  std::uint64_t tag = 0;  // carried by every request (cancel_tag); 0: the stream's own address
  int priority = 0;
  // How a unit names itself in errors: "frame 3" (default: "unit 3").
  std::function<std::string(std::uint64_t unit)> name;
};

// How far a unit must be before next() hands it out.
enum class Readiness : std::uint8_t {
  done,    // every request finished: the bytes are in place (host consumers)
  issued,  // every read done and its GPU work issued: wait on fence_event / wait_on_stream for the rest
};

struct SlotDelivery {
  std::uint64_t unit = 0;
  std::uint32_t slot = 0;
  FenceId fence = 0;
  std::vector<RequestId> requests;
  RequestSummary summary;  // of its requests when handed out (GPU work may still run: Readiness::issued)
  double ready_seconds = 0;  // from its submit to being handed out
  double waited_seconds = 0;  // how long next() blocked for it
};

class SlotStream {
 public:
  // The queue must outlive the stream; the slots' memory must outlive it too (the destructor waits
  // until no request of the stream writes a slot).
  SlotStream(Queue& queue, SlotFill fill, SlotStreamOptions options);
  ~SlotStream() noexcept;
  SlotStream(const SlotStream&) = delete;
  SlotStream& operator=(const SlotStream&) = delete;

  // Delivers these units from now on, in this order: stops what is in flight (a seek), then fills
  // every free slot.
  void play(std::vector<std::uint64_t> order);
  // Appends units to the order; they load as slots free up, while earlier ones are in use.
  void extend(std::span<const std::uint64_t> units);
  // The next unit of the order (nullopt once every unit was delivered). The slot of a unit whose
  // request failed goes back, and the Error names the unit and its first failed request.
  std::optional<SlotDelivery> next(Readiness readiness = Readiness::done);
  // Gives a delivered slot back. consumer: a CUstream whose queued work still reads the slot (the
  // slot is refilled once an event recorded on it now has fired); 0: nothing reads it any more.
  void release(std::uint32_t slot, std::uintptr_t consumer = 0);
  // Cancels every request of the stream and waits until none writes a slot; delivered slots not
  // released stay out.
  void stop();
  // Refills the slots whose consumer is done, then waits until every unit in flight has arrived,
  // without handing any out: a caller whose time covers what it loaded ahead (a failed unit throws at
  // its next()).
  void settle();
  // Refills the slots whose consumer is done and returns: what is in flight keeps loading after the
  // caller returns (the next call finds it in flight or arrived).
  void refill();

  // Fills `slot` with `unit` now, whatever the order (a cache that picks slots itself). The slot must
  // not be in flight; wait_loaded() waits for every such load.
  void load(std::uint64_t unit, std::uint32_t slot);
  // Waits for every load() since the last call; throws like next() for the first failed one. Returns
  // the fence that covers them (GPU consumers wait on it).
  FenceId wait_loaded(Readiness readiness = Readiness::done);

  [[nodiscard]] std::uint32_t slot_count() const noexcept { return options_.slots; }
  // Units scheduled (in a slot, being read) and not yet handed out.
  [[nodiscard]] std::size_t in_flight() const noexcept { return in_flight_.size(); }
  // The units of the order not yet given a slot.
  [[nodiscard]] std::size_t unscheduled() const noexcept { return order_.size(); }
  // The unit next() hands out next, when one is in flight or waiting.
  [[nodiscard]] std::optional<std::uint64_t> upcoming() const;
  // Times release() had to wait for a consumer's event before a slot could be refilled.
  [[nodiscard]] std::uint64_t release_waits() const noexcept { return release_waits_; }
  [[nodiscard]] std::uint64_t tag() const noexcept { return options_.tag; }
  [[nodiscard]] Queue& queue() const noexcept { return queue_; }

 private:
  struct Scheduled {
    std::uint64_t unit = 0;
    std::uint32_t slot = 0;
    std::vector<RequestId> requests;
    FenceId fence = 0;  // none for load(): wait_loaded() fences them together
    detail::SteadyClock::time_point submitted_at;
  };
  struct Releasing;

  // Schedules units of the order into free slots; one submit for all.
  void fill();
  Scheduled schedule(std::uint64_t unit, std::uint32_t slot, std::vector<Request> requests, bool fenced);
  // A unit's requests (fill_), no more than the queue keeps statuses of.
  [[nodiscard]] std::vector<Request> requests_of(std::uint64_t unit, std::uint32_t slot) const;
  // Frees released slots whose consumer is done; with block, waits for the oldest one.
  void reclaim(bool block);
  void wait_for(FenceId fence, Readiness readiness) const;
  // Throws for a unit whose requests failed (its slot goes back).
  void expect_done(const Scheduled& unit, const RequestSummary& summary);

  Queue& queue_;
  SlotFill fill_;
  SlotStreamOptions options_;
  std::deque<std::uint32_t> free_;
  std::deque<Scheduled> in_flight_;
  std::deque<std::unique_ptr<Releasing>> releasing_;
  std::deque<std::uint64_t> order_;
  std::vector<Scheduled> loads_;  // load() since the last wait_loaded()
  std::uint64_t release_waits_ = 0;
};

}  // namespace headrace::engine
