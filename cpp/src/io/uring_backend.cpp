#include "headrace/io/uring_backend.hpp"

#include "headrace/error.hpp"

#ifdef HEADRACE_HAVE_LIBURING

#include <liburing.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include "headrace/detail/aligned_buffer.hpp"
#include "headrace/detail/byte_size.hpp"
#include "headrace/detail/thread_name.hpp"
#include "headrace/io/detail/file_reads.hpp"
#include "headrace/io/detail/read_plan.hpp"

namespace headrace::io {
namespace {

constexpr std::uint64_t alignment = headrace::detail::io_alignment_bytes;
// An SQE length is 32 bits; longer reads go in pieces, like short reads.
constexpr std::uint64_t max_sqe_bytes = std::uint64_t{1} << 30;

const char* on_off(bool value) { return value ? "on" : "off"; }

// Owns one io_uring: set up in the constructor, torn down (registrations included) once.
class RingHandle {
 public:
  explicit RingHandle(unsigned entries) {
    const int result = io_uring_queue_init(entries, &ring_, 0);
    if (result < 0) {
      throw UnavailableError("io_uring_queue_init(entries=" + std::to_string(entries) +
                             ") failed: " + std::strerror(-result));
    }
  }
  ~RingHandle() noexcept { io_uring_queue_exit(&ring_); }
  RingHandle(const RingHandle&) = delete;
  RingHandle& operator=(const RingHandle&) = delete;

  [[nodiscard]] io_uring* get() noexcept { return &ring_; }

 private:
  io_uring ring_{};
};

}  // namespace

std::optional<std::string> uring_unavailable_reason(const Settings& settings) {
  try {
    RingHandle probe(settings.queue_depth);
  } catch (const UnavailableError& error) {
    return std::string(error.what());
  }
  return std::nullopt;
}

class UringBackend::Ring {
 public:
  Ring(const std::string& path, const Settings& settings);
  ~Ring() noexcept;
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  [[nodiscard]] std::uint64_t file_size_bytes() const noexcept { return file_.size_bytes; }
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] std::shared_ptr<ReadBatch> submit(std::vector<ReadRequest> requests);

 private:
  struct Work {
    detail::ReadTask task;
    std::shared_ptr<ReadBatch> batch;
  };
  // One read in flight. The kernel writes file bytes [read_offset, read_offset + read_bytes) to
  // buffer: the destination itself, or the slot's bounce buffer (O_DIRECT on an unaligned task,
  // or registered buffers), from which the task's bytes are copied once wanted_bytes arrived.
  struct Slot {
    Work work;
    std::byte* buffer = nullptr;
    std::uint64_t read_offset = 0;
    std::uint64_t read_bytes = 0;
    std::uint64_t wanted_bytes = 0;
    std::uint64_t done_bytes = 0;
    bool bounced = false;
  };

  void run() noexcept;
  void start(Work work);
  void prepare(unsigned slot_index);
  void submit_prepared();
  void reap();
  void handle(unsigned slot_index, int result);
  void finish(unsigned slot_index, std::uint64_t bytes, int error_number, const std::string& message);

  const std::string path_;
  const Settings settings_;
  detail::OpenedFile file_;
  headrace::detail::AlignedBuffer bounce_buffers_;  // queue_depth x task_size_bytes, when needed
  RingHandle ring_;                                 // after the buffers: unregisters them first
  std::vector<Slot> slots_;

  // Worker-only state.
  std::vector<unsigned> free_slots_;
  std::deque<unsigned> unsubmitted_;  // slots whose SQE the kernel has not taken yet, in order
  unsigned in_flight_ = 0;
  std::string broken_;  // why io_uring_submit failed for good; every later read fails with it
  int broken_errno_ = 0;

  // Shared with submit().
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Work> incoming_;
  bool stopping_ = false;

  std::thread worker_;  // last: started once everything above exists
};

UringBackend::Ring::Ring(const std::string& path, const Settings& settings)
    : path_(path),
      settings_(settings),
      file_(detail::open_for_reading(path, settings.uring_o_direct)),
      bounce_buffers_(settings.uring_o_direct || settings.uring_register_buffers
                          ? std::size_t{settings.queue_depth} * settings.task_size_bytes
                          : 0),
      ring_(settings.queue_depth),
      slots_(settings.queue_depth) {
  if (settings_.uring_register_files) {
    const int fd = file_.fd.get();
    if (const int result = io_uring_register_files(ring_.get(), &fd, 1); result < 0) {
      throw UnavailableError("io_uring_register_files(" + path_ + ") failed: " + std::strerror(-result));
    }
  }
  if (settings_.uring_register_buffers) {
    std::vector<iovec> buffers(settings_.queue_depth);
    for (unsigned i = 0; i < settings_.queue_depth; ++i) {
      buffers[i] = iovec{bounce_buffers_.data() + std::size_t{i} * settings_.task_size_bytes,
                         static_cast<std::size_t>(settings_.task_size_bytes)};
    }
    if (const int result = io_uring_register_buffers(ring_.get(), buffers.data(), settings_.queue_depth); result < 0) {
      throw UnavailableError("io_uring_register_buffers(" + std::to_string(settings_.queue_depth) + " x " +
                             headrace::detail::format_byte_size(settings_.task_size_bytes) +
                             ") failed: " + std::strerror(-result) + " (RLIMIT_MEMLOCK too low?)");
    }
  }
  for (unsigned i = settings_.queue_depth; i > 0; --i) free_slots_.push_back(i - 1);
  worker_ = std::thread([this] {
    headrace::detail::name_this_thread(headrace::detail::uring_thread_name);
    run();
  });
}

UringBackend::Ring::~Ring() noexcept {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  worker_.join();
}

std::string UringBackend::Ring::describe() const {
  return "uring queue_depth=" + std::to_string(settings_.queue_depth) +
         " submit_batch=" + std::to_string(settings_.submit_batch) +
         " task=" + headrace::detail::format_byte_size(settings_.task_size_bytes) +
         " o_direct=" + on_off(settings_.uring_o_direct) + " register_files=" + on_off(settings_.uring_register_files) +
         " register_buffers=" + on_off(settings_.uring_register_buffers);
}

std::shared_ptr<ReadBatch> UringBackend::Ring::submit(std::vector<ReadRequest> requests) {
  auto batch = std::make_shared<ReadBatch>(std::span<ReadRequest>(requests));
  auto tasks = detail::plan_reads(requests, file_.size_bytes, settings_.task_size_bytes, path_, *batch);
  if (!tasks.empty()) {
    {
      std::lock_guard lock(mutex_);
      for (const auto& task : tasks) incoming_.push_back(Work{task, batch});
    }
    wake_.notify_one();
  }
  return batch;
}

void UringBackend::Ring::run() noexcept {
  std::deque<Work> waiting;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      // Sleep only when idle; with reads in flight, new work is picked up after the next completion.
      // Remainders of short reads prepared while reaping count as work: they are not submitted yet.
      const bool idle = waiting.empty() && in_flight_ == 0 && unsubmitted_.empty();
      if (idle) wake_.wait(lock, [this] { return stopping_ || !incoming_.empty(); });
      std::move(incoming_.begin(), incoming_.end(), std::back_inserter(waiting));
      incoming_.clear();
      if (idle && waiting.empty() && stopping_) return;
    }
    while (!waiting.empty() && (!free_slots_.empty() || !broken_.empty())) {
      start(std::move(waiting.front()));
      waiting.pop_front();
      if (unsubmitted_.size() >= settings_.submit_batch) submit_prepared();
    }
    submit_prepared();  // the tail of the batch and the remainders prepared while reaping
    if (in_flight_ > 0) reap();
  }
}

void UringBackend::Ring::start(Work work) {
  if (!broken_.empty()) {
    work.batch->complete_part(work.task.request_index, 0, broken_errno_, broken_);
    return;
  }
  const unsigned slot_index = free_slots_.back();
  free_slots_.pop_back();
  Slot& slot = slots_[slot_index];
  slot.work = std::move(work);
  const detail::ReadTask& task = slot.work.task;
  const bool aligned = task.file_offset % alignment == 0 && task.size_bytes % alignment == 0 &&
                       reinterpret_cast<std::uintptr_t>(task.destination) % alignment == 0;
  slot.bounced = settings_.uring_register_buffers || (settings_.uring_o_direct && !aligned);
  if (slot.bounced) {
    // plan_reads keeps a task's aligned cover within task_size_bytes, the size of a bounce buffer.
    const std::uint64_t cover_alignment = settings_.uring_o_direct ? alignment : 1;
    slot.read_offset = detail::align_down(task.file_offset, cover_alignment);
    slot.read_bytes = detail::align_up(task.file_offset + task.size_bytes, cover_alignment) - slot.read_offset;
    slot.buffer = bounce_buffers_.data() + std::size_t{slot_index} * settings_.task_size_bytes;
  } else {
    slot.read_offset = task.file_offset;
    slot.read_bytes = task.size_bytes;
    slot.buffer = task.destination;
  }
  slot.wanted_bytes = task.file_offset + task.size_bytes - slot.read_offset;
  slot.done_bytes = 0;
  prepare(slot_index);
}

void UringBackend::Ring::prepare(unsigned slot_index) {
  const Slot& slot = slots_[slot_index];
  // Never null: the SQ has at least queue_depth entries and each slot holds at most one SQE.
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  const auto length = static_cast<unsigned>(std::min(slot.read_bytes - slot.done_bytes, max_sqe_bytes));
  const int fd = settings_.uring_register_files ? 0 : file_.fd.get();  // index 0 of the registered files
  if (settings_.uring_register_buffers) {
    io_uring_prep_read_fixed(sqe, fd, slot.buffer + slot.done_bytes, length, slot.read_offset + slot.done_bytes,
                             static_cast<int>(slot_index));
  } else {
    io_uring_prep_read(sqe, fd, slot.buffer + slot.done_bytes, length, slot.read_offset + slot.done_bytes);
  }
  if (settings_.uring_register_files) io_uring_sqe_set_flags(sqe, IOSQE_FIXED_FILE);
  io_uring_sqe_set_data64(sqe, slot_index);
  unsubmitted_.push_back(slot_index);
}

void UringBackend::Ring::submit_prepared() {
  while (!unsubmitted_.empty()) {
    const int result = io_uring_submit(ring_.get());
    if (result > 0) {
      in_flight_ += static_cast<unsigned>(result);
      unsubmitted_.erase(unsubmitted_.begin(), unsubmitted_.begin() + result);
      continue;
    }
    if (result == 0 || result == -EINTR || result == -EAGAIN || result == -EBUSY) {
      // The kernel is short of request memory or completion room: free some, then retry.
      if (in_flight_ > 0) {
        reap();
      } else {
        std::this_thread::yield();
      }
      continue;
    }
    // The ring itself is unusable. The SQEs it did not take are never submitted again.
    broken_errno_ = -result;
    broken_ = headrace::detail::system_message("io_uring_submit", path_, broken_errno_, __FILE__, __LINE__);
    const std::deque<unsigned> failed = std::exchange(unsubmitted_, {});
    for (unsigned slot_index : failed) finish(slot_index, 0, broken_errno_, broken_);
  }
}

void UringBackend::Ring::reap() {
  io_uring_cqe* cqe = nullptr;
  for (int result; (result = io_uring_wait_cqe(ring_.get(), &cqe)) < 0;) {
    if (result == -EINTR || result == -EAGAIN) continue;
    // Reads still in flight cannot be abandoned: the kernel would write into memory we free.
    std::fprintf(stderr, "headrace: io_uring_wait_cqe(%s) failed: %s; aborting\n", path_.c_str(),
                 std::strerror(-result));
    std::abort();
  }
  do {
    const auto slot_index = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
    const int result = cqe->res;
    io_uring_cqe_seen(ring_.get(), cqe);
    --in_flight_;
    handle(slot_index, result);
  } while (io_uring_peek_cqe(ring_.get(), &cqe) == 0);
}

void UringBackend::Ring::handle(unsigned slot_index, int result) {
  Slot& slot = slots_[slot_index];
  const detail::ReadTask& task = slot.work.task;
  if (result == -EAGAIN || result == -EINTR) {
    prepare(slot_index);
    return;
  }
  const std::uint64_t landed = slot.bounced ? 0 : slot.done_bytes;
  if (result < 0) {
    const char* call = settings_.uring_register_buffers ? "io_uring read_fixed" : "io_uring read";
    finish(slot_index, landed, -result,
           detail::read_error_message(call, path_, slot.read_offset + slot.done_bytes, -result, __FILE__, __LINE__));
    return;
  }
  slot.done_bytes += static_cast<std::uint64_t>(result);
  if (slot.done_bytes >= slot.wanted_bytes) {
    if (slot.bounced) {
      std::memcpy(task.destination, slot.buffer + (task.file_offset - slot.read_offset), task.size_bytes);
    }
    finish(slot_index, task.size_bytes, 0, {});
    return;
  }
  // A read of 0 bytes, or an O_DIRECT read stopping off a 4096 boundary, is the end of the file:
  // it shrank after open (plan_reads keeps tasks within the size seen then).
  if (result == 0 || (settings_.uring_o_direct && slot.done_bytes % alignment != 0)) {
    finish(slot_index, slot.bounced ? 0 : slot.done_bytes, ReadStatus::end_of_file_error_number,
           detail::end_of_file_message(path_, task.file_offset, task.size_bytes, slot.read_offset + slot.done_bytes,
                                       __FILE__, __LINE__));
    return;
  }
  prepare(slot_index);  // a short read: ask for the rest
}

void UringBackend::Ring::finish(unsigned slot_index, std::uint64_t bytes, int error_number, const std::string& message) {
  Work work = std::exchange(slots_[slot_index].work, Work{});
  free_slots_.push_back(slot_index);
  work.batch->complete_part(work.task.request_index, bytes, error_number, message);
}

UringBackend::UringBackend(const std::string& path, const Settings& settings)
    : UringBackend(std::make_unique<Ring>(path, settings), path) {}

UringBackend::UringBackend(std::unique_ptr<Ring> ring, const std::string& path)
    : Backend(path, ring->file_size_bytes()), ring_(std::move(ring)) {}

UringBackend::~UringBackend() = default;

std::string UringBackend::describe() const { return ring_->describe(); }

std::shared_ptr<ReadBatch> UringBackend::submit(std::vector<ReadRequest> requests) {
  return ring_->submit(std::move(requests));
}

}  // namespace headrace::io

#else  // !HEADRACE_HAVE_LIBURING

namespace headrace::io {
namespace {
constexpr const char* without_liburing = "headrace was built without liburing";
}  // namespace

std::optional<std::string> uring_unavailable_reason(const Settings&) { return std::string(without_liburing); }

// Never instantiated (the constructor throws first); complete so that ring_ can be destroyed.
class UringBackend::Ring {};

UringBackend::UringBackend(const std::string& path, const Settings&) : Backend(path, 0) {
  throw UnavailableError(without_liburing);
}

UringBackend::~UringBackend() = default;

std::string UringBackend::describe() const { return std::string("uring unavailable: ") + without_liburing; }

std::shared_ptr<ReadBatch> UringBackend::submit(std::vector<ReadRequest>) { throw UnavailableError(without_liburing); }

}  // namespace headrace::io

#endif
