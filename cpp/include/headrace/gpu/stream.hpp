// Move-only CUDA streams and events.
#pragma once

#include "headrace/gpu/cuda_driver.hpp"

namespace headrace::gpu {

class Stream {
 public:
  Stream();  // non-blocking: never waits for the legacy default stream
  ~Stream() noexcept;
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&&) = delete;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  [[nodiscard]] CUstream handle() const noexcept { return stream_; }
  void synchronize() const;

 private:
  CUstream stream_ = nullptr;
};

class Event {
 public:
  explicit Event(bool timing = false);
  ~Event() noexcept;
  Event(Event&& other) noexcept;
  Event& operator=(Event&&) = delete;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  [[nodiscard]] CUevent handle() const noexcept { return event_; }
  void record(CUstream stream) const;
  [[nodiscard]] bool query() const;  // true when the work it follows has completed
  void synchronize() const;
  // Milliseconds from start to this event (both recorded with timing).
  [[nodiscard]] float elapsed_ms_since(const Event& start) const;

 private:
  CUevent event_ = nullptr;
};

}  // namespace headrace::gpu
