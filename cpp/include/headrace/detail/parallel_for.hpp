// Runs body(i) for i in [0, count) on several threads (the caller's included), then rethrows the
// first exception any call threw. For bursts of CPU work (encode, decode, verify): on fresh threads,
// or on a ThreadPool that lives as long as its user (the queue's finisher, which would otherwise
// start and join threads for every batch).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <latch>
#include <mutex>
#include <thread>
#include <vector>

#include "headrace/detail/thread_pool.hpp"

namespace headrace::detail {

// Hands out indices until they run out or a call throws; keeps the first exception.
template <typename Body>
class IndexLoop {
 public:
  IndexLoop(std::uint64_t count, Body& body) : count_(count), body_(body) {}

  void work() {
    for (std::uint64_t i = next_++; i < count_; i = next_++) {
      try {
        body_(i);
      } catch (...) {
        std::lock_guard lock(failure_mutex_);
        if (!failure_) failure_ = std::current_exception();
        next_ = count_;  // stop handing out work
      }
    }
  }

  void rethrow() const {
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  std::uint64_t count_;
  Body& body_;
  std::atomic<std::uint64_t> next_{0};
  std::exception_ptr failure_;
  std::mutex failure_mutex_;
};

template <typename Body>
void parallel_for(std::uint64_t count, unsigned threads, Body&& body) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  IndexLoop<Body> loop(count, body);
  std::vector<std::thread> pool;
  for (std::uint64_t t = 1; t < std::min<std::uint64_t>(threads, count); ++t) pool.emplace_back([&] { loop.work(); });
  loop.work();
  for (auto& thread : pool) thread.join();
  loop.rethrow();
}

template <typename Body>
void parallel_for(ThreadPool& pool, std::uint64_t count, Body&& body) {
  IndexLoop<Body> loop(count, body);
  const auto helpers = static_cast<std::ptrdiff_t>(std::min<std::uint64_t>(pool.thread_count(), count > 0 ? count - 1 : 0));
  std::latch done(helpers);
  for (std::ptrdiff_t h = 0; h < helpers; ++h)
    pool.submit([&](unsigned) {
      loop.work();
      done.count_down();
    });
  loop.work();
  done.wait();  // the helpers use loop and done: neither may go before they are finished
  loop.rethrow();
}

}  // namespace headrace::detail
