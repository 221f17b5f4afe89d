#include "headrace/gpu/stream.hpp"

#include <utility>

namespace headrace::gpu {

Stream::Stream() { check(require_driver().cuStreamCreate(&stream_, stream_non_blocking), "cuStreamCreate"); }

Stream::~Stream() noexcept {
  if (stream_ != nullptr) driver()->cuStreamDestroy(stream_);
}

Stream::Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}

void Stream::synchronize() const { check(driver()->cuStreamSynchronize(stream_), "cuStreamSynchronize"); }

Event::Event(bool timing) {
  check(require_driver().cuEventCreate(&event_, timing ? 0u : event_disable_timing), "cuEventCreate");
}

Event::~Event() noexcept {
  if (event_ != nullptr) driver()->cuEventDestroy(event_);
}

Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}

void Event::record(CUstream stream) const { check(driver()->cuEventRecord(event_, stream), "cuEventRecord"); }

bool Event::query() const {
  const CUresult result = driver()->cuEventQuery(event_);
  if (result == cuda_error_not_ready) return false;
  check(result, "cuEventQuery");
  return true;
}

void Event::synchronize() const { check(driver()->cuEventSynchronize(event_), "cuEventSynchronize"); }

float Event::elapsed_ms_since(const Event& start) const {
  float ms = 0;
  check(driver()->cuEventElapsedTime(&ms, start.event_, event_), "cuEventElapsedTime");
  return ms;
}

}  // namespace headrace::gpu
