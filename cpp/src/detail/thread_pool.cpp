#include "headrace/detail/thread_pool.hpp"

#include <string>
#include <utility>

#include "headrace/detail/thread_name.hpp"
#include "headrace/error.hpp"

namespace headrace::detail {

ThreadPool::ThreadPool(unsigned thread_count, const char* name) {
  HEADRACE_EXPECT(thread_count >= 1, UsageError, "a thread pool needs at least one thread, got 0");
  workers_.reserve(thread_count);
  try {
    for (unsigned i = 0; i < thread_count; ++i) workers_.emplace_back([this, i, name] {
      name_this_thread(name);
      run(i);
    });
  } catch (...) {
    // Threads already started would otherwise be destroyed joinable, which terminates.
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& worker : workers_) worker.join();
    throw;
  }
}

ThreadPool::~ThreadPool() noexcept {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::submit(Task task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void ThreadPool::run(unsigned worker_index) noexcept {
  for (;;) {
    Task task;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task(worker_index);
  }
}

}  // namespace headrace::detail
