// A fixed set of worker threads running queued tasks in submission order. Each task is told the
// index of the worker running it, so callers can keep per-worker scratch (bounce buffers) without
// thread_local state. The destructor runs every queued task, then joins.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace headrace::detail {

class ThreadPool {
 public:
  // A task must not throw: an escaping exception ends the process (std::terminate).
  using Task = std::function<void(unsigned worker_index)>;

  // Throws UsageError for thread_count 0. Every worker is named `name` (thread_name.hpp).
  ThreadPool(unsigned thread_count, const char* name);
  ~ThreadPool() noexcept;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void submit(Task task);
  [[nodiscard]] unsigned thread_count() const noexcept { return static_cast<unsigned>(workers_.size()); }

 private:
  void run(unsigned worker_index) noexcept;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;  // last: started after the queue exists, joined first
};

}  // namespace headrace::detail
