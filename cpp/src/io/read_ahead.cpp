#include "headrace/io/read_ahead.hpp"

#include <fcntl.h>

#include <algorithm>

#include "headrace/detail/thread_name.hpp"

namespace headrace::io {
namespace {

// One advice at a time: the mark moves on while the kernel takes a step, and a reader that catches up
// with the advice waits on pages already under way rather than asking for them itself.
constexpr std::uint64_t advice_step = std::uint64_t{16} << 20;

}  // namespace

ReadAhead::ReadAhead(const std::string& path, std::uint64_t file_size, std::uint64_t ahead_bytes)
    : fd_(headrace::detail::FileDescriptor::open_read(path, 0)),
      file_size_(file_size),
      ahead_bytes_(ahead_bytes),
      thread_([this] { run(); }) {}

ReadAhead::~ReadAhead() noexcept {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wanted_changed_.notify_one();
  thread_.join();
}

void ReadAhead::want(std::uint64_t end) {
  const std::uint64_t target = std::min(file_size_, end + ahead_bytes_);
  {
    std::lock_guard lock(mutex_);
    if (target <= wanted_) return;
    wanted_ = target;
  }
  wanted_changed_.notify_one();
}

std::uint64_t ReadAhead::advised_bytes() const {
  std::lock_guard lock(mutex_);
  return advised_;
}

void ReadAhead::run() noexcept {
  headrace::detail::name_this_thread(headrace::detail::read_ahead_thread_name);
  std::unique_lock lock(mutex_);
  for (;;) {
    wanted_changed_.wait(lock, [this] { return stopping_ || advised_ < wanted_; });
    if (stopping_) return;
    const std::uint64_t from = advised_, size = std::min(advice_step, wanted_ - advised_);
    lock.unlock();
    // Advice only: where the kernel declines, the readers read the pages themselves.
    ::posix_fadvise(fd_.get(), static_cast<off_t>(from), static_cast<off_t>(size), POSIX_FADV_WILLNEED);
    lock.lock();
    advised_ = from + size;
  }
}

}  // namespace headrace::io
