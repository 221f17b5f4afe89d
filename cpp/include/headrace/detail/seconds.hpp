// Durations of the library's own timings, in seconds, on the steady clock.
#pragma once

#include <chrono>

namespace headrace::detail {

using SteadyClock = std::chrono::steady_clock;

[[nodiscard]] inline double seconds_between(SteadyClock::time_point from, SteadyClock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

[[nodiscard]] inline double seconds_since(SteadyClock::time_point start) { return seconds_between(start, SteadyClock::now()); }

}  // namespace headrace::detail
