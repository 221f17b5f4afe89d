// Runs body(i) for i in [0, count) on up to `threads` threads (the caller's included), then
// rethrows the first exception any call threw. For short bursts of CPU work (encode, decode, verify).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace headrace::detail {

template <typename Body>
void parallel_for(std::uint64_t count, unsigned threads, Body&& body) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<std::uint64_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    for (std::uint64_t i = next++; i < count; i = next++) {
      try {
        body(i);
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = count;  // stop handing out work
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::uint64_t t = 1; t < std::min<std::uint64_t>(threads, count); ++t) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace headrace::detail
