// The route the probe reads through, chosen once per run and reported with every point: io_uring with
// O_DIRECT (cold) when it can, otherwise a named fallback. Never silent (STYLE habit 5).
#pragma once

#include <cstdint>
#include <string>

#include "headrace/detail/enum_names.hpp"
#include "headrace/io/backend.hpp"

namespace headrace::probe {

enum class CacheState : std::uint8_t {
  cold,  // O_DIRECT: the page cache is bypassed, every byte comes from the device
  hot,   // buffered reads of a file already in the page cache, or a file system in RAM (tmpfs)
};

inline constexpr detail::EnumNames<CacheState, 2> cache_state_names{{{CacheState::cold, "cold"}, {CacheState::hot, "hot"}}};
[[nodiscard]] constexpr const char* to_string(CacheState state) noexcept { return detail::name_of(cache_state_names, state); }

struct IoPath {
  io::BackendKind backend = io::BackendKind::uring;
  bool o_direct = true;
  CacheState cache_state = CacheState::cold;
  // Why the preferred route (io_uring, O_DIRECT, cold) was not taken; empty when it was.
  std::string note;

  // "uring O_DIRECT", "direct O_DIRECT (fallback)", "uring buffered".
  [[nodiscard]] std::string describe() const;
  [[nodiscard]] bool is_fallback() const noexcept { return !note.empty(); }
};

// Picks the route for reading path: uring (O_DIRECT when the file system has it), else direct
// (O_DIRECT) or posix (buffered). With strict, any fallback throws UnavailableError with the reason.
[[nodiscard]] IoPath choose_io_path(const std::string& path, bool strict);

// The backend options of one probe thread keeping queue_depth reads of block_size_bytes in flight.
[[nodiscard]] io::BackendOptions backend_options(const IoPath& io_path, std::uint64_t block_size_bytes,
                                                 unsigned queue_depth);

}  // namespace headrace::probe
