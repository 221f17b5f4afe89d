// A file's bytes the engine read from the disk, held in page-locked memory it owns. O_DIRECT leaves
// them nowhere else, so every pass over a series that fits in memory ran at the disk's rate, a viewer's
// loop and a script's second pass alike (issue 39). The memory is mapped at once (anonymous, in huge
// pages where the kernel gives them, nothing faulted in), filled as the first pass lands, and page-locked
// by lock() on a thread of its own when the engine asks (engine/queue.cpp says when), or a flight's bytes
// at a time by lock_range() before the flight's copies to the GPU fill it back by DMA (engine/finish.cpp);
// once locked, what it holds is DMA'd to the GPU as a page-locked file's pages are.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace headrace::staging {

class HeldCopy {
 public:
  // Maps size_bytes (nothing faulted in yet). Throws SystemError naming what (the file) when mmap fails.
  HeldCopy(std::uint64_t size_bytes, const std::string& what);
  ~HeldCopy() noexcept;
  HeldCopy(const HeldCopy&) = delete;
  HeldCopy& operator=(const HeldCopy&) = delete;

  // Page-locks what was filled and is not locked yet: per stretch between the spans locked before, from
  // its first filled byte to its last, in whole 4 KiB pages (cuMemHostRegister faults in what the fills
  // have not), so a rank that read its quarter of a file locks that quarter. One caller at a time; its
  // thread has the GPU's context current. Throws CudaError: the copy then never serves a read again.
  void lock();
  [[nodiscard]] bool refused() const noexcept { return refused_.load(std::memory_order_acquire); }
  // Filled bytes that lie in no locked span: what another lock() would lock.
  [[nodiscard]] bool unlocked_fills() const;
  [[nodiscard]] double lock_seconds() const noexcept { return lock_seconds_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t locked_bytes() const;

  [[nodiscard]] const std::byte* data() const noexcept { return data_; }
  // Where a DMA writes the bytes of file offset `offset` (in a locked span, then record_filled()).
  [[nodiscard]] std::byte* fill_target(std::uint64_t offset) const noexcept { return data_ + offset; }
  [[nodiscard]] std::uint64_t size_bytes() const noexcept { return size_bytes_; }

  // Page-locks [offset, offset + size) in whole pages, clipped to what no span locks yet (one registration,
  // or none): the finisher locks a flight's bytes before their copies to the GPU fill the copy by DMA. Its
  // thread has the GPU's context current. Throws CudaError: the copy then never serves a read again.
  void lock_range(std::uint64_t offset, std::uint64_t size);
  // Whether one locked span holds [offset, offset + size) whole, filled or not: a DMA may write it.
  [[nodiscard]] bool locked(std::uint64_t offset, std::uint64_t size) const;

  // Copies size bytes that landed for file offset `offset` into the copy and records them held; bytes
  // past its end are ignored. Thread-safe; nothing once the driver refused to lock it.
  void fill(std::uint64_t offset, const std::byte* bytes, std::uint64_t size);
  // Records [offset, offset + size) held: what a DMA wrote into the copy (fill() copies, then records).
  void record_filled(std::uint64_t offset, std::uint64_t size);
  // Whether [offset, offset + size) was filled.
  [[nodiscard]] bool filled(std::uint64_t offset, std::uint64_t size) const;
  // Where the locked span holding [offset, offset + size), filled, ends (an offset into the copy: a copy
  // from it never crosses into another registration); nullopt when no span holds it whole.
  [[nodiscard]] std::optional<std::uint64_t> held_until(std::uint64_t offset, std::uint64_t size) const;
  [[nodiscard]] std::uint64_t filled_bytes() const;

 private:
  [[nodiscard]] bool filled_locked(std::uint64_t offset, std::uint64_t size) const;
  // Registers [begin, end) (whole pages, no span's); under registering_.
  void register_span(std::uint64_t begin, std::uint64_t end);

  std::byte* data_ = nullptr;  // mapped [data_, data_ + mapped_bytes_)
  std::uint64_t size_bytes_ = 0, mapped_bytes_ = 0;
  std::atomic<bool> refused_{false};
  std::atomic<double> lock_seconds_{0};
  std::mutex registering_;  // one registration at a time (lock() and lock_range() each look for gaps first)
  mutable std::mutex mutex_;
  std::map<std::uint64_t, std::uint64_t> filled_;  // start -> end of each run filled, runs apart
  std::map<std::uint64_t, std::uint64_t> locked_;  // start -> end of each span registered
  std::uint64_t filled_bytes_ = 0;
};

}  // namespace headrace::staging
