// How sort-last compositing shares an image among the ranks that drew it. Direct send: rank k owns the
// band of rows from k * ceil(height / ranks), every rank sends it its layer of that band and it
// composites them. Binary swap (ranks a power of two): each round halves the run of pixels a rank holds,
// its partner (rank ^ 2^round) taking the other half, the rank whose bit is 0 keeping the first half.
// Either way the owners of the final runs send them to the root, which then holds the image.
#pragma once

#include <cstdint>

namespace headrace::workloads::common {

struct PixelRun {
  std::uint64_t first = 0, count = 0;  // in pixels, row-major
};

// Direct send: rank `rank`'s band of rows of a width x height image (possibly empty for the last ranks).
[[nodiscard]] inline PixelRun direct_send_band(int rank, int ranks, std::int32_t width, std::int32_t height) {
  const std::int64_t band = (height + ranks - 1) / ranks;
  const std::int64_t first = band * rank < height ? band * rank : height;  // the last ranks' bands may be empty
  const std::int64_t rows = first + band > height ? height - first : band;
  return {static_cast<std::uint64_t>(first * width), static_cast<std::uint64_t>(rows * width)};
}

[[nodiscard]] constexpr bool is_power_of_two(int n) noexcept { return n > 0 && (n & (n - 1)) == 0; }

// Binary swap: the half of `run` that rank keeps in `round` (the other half goes to its partner).
[[nodiscard]] inline PixelRun binary_swap_kept(PixelRun run, int rank, int round) {
  const std::uint64_t lower = run.count / 2;
  return ((rank >> round) & 1) == 0 ? PixelRun{run.first, lower} : PixelRun{run.first + lower, run.count - lower};
}

// Binary swap: the run rank holds after every round, out of an image of `pixels`.
[[nodiscard]] inline PixelRun binary_swap_final(int rank, int ranks, std::uint64_t pixels) {
  PixelRun run{0, pixels};
  for (int round = 0; (1 << round) < ranks; ++round) run = binary_swap_kept(run, rank, round);
  return run;
}

}  // namespace headrace::workloads::common
