#include "headrace/gpu/copy_rate.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "headrace/error.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/stream.hpp"

namespace headrace::gpu {

double pinned_copy_rate(int device, std::size_t size_bytes, unsigned repeats) {
  HEADRACE_EXPECT(size_bytes > 0 && repeats > 0, UsageError,
                  "a copy rate needs bytes and repeats, got " + std::to_string(size_bytes) + " bytes, " +
                      std::to_string(repeats) + " repeats");
  return PinnedCopies(device, size_bytes).fastest_rate(repeats);
}

namespace {
std::size_t copy_size(std::size_t size_bytes) {
  HEADRACE_EXPECT(size_bytes > 0, UsageError, "copies of 0 bytes");
  return size_bytes;
}
}  // namespace

PinnedCopies::PinnedCopies(int device, std::size_t size_bytes)
    : device_(device),
      host_((device_.make_current(), copy_size(size_bytes))),
      target_(size_bytes) {
  std::memset(host_.data(), 1, size_bytes);  // pages touched before the clock
}

void PinnedCopies::issue() const {
  check(require_driver().cuMemcpyHtoDAsync(target_.pointer(), host_.data(), host_.size_bytes(), stream_.handle()),
        "cuMemcpyHtoDAsync");
}

double PinnedCopies::run(unsigned copies) const {
  device_.make_current();
  const auto started = std::chrono::steady_clock::now();
  for (unsigned i = 0; i < copies; ++i) issue();
  stream_.synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

double PinnedCopies::fastest_rate(unsigned repeats) const {
  device_.make_current();
  const Event start(true), end(true);
  issue();  // untimed: the first copy pays for setting up the path
  stream_.synchronize();
  float best_ms = 0;
  for (unsigned i = 0; i < repeats; ++i) {
    start.record(stream_.handle());
    issue();
    end.record(stream_.handle());
    end.synchronize();
    const float ms = end.elapsed_ms_since(start);
    best_ms = i == 0 ? ms : std::min(best_ms, ms);
  }
  return static_cast<double>(host_.size_bytes()) / (static_cast<double>(best_ms) / 1e3);
}

}  // namespace headrace::gpu
