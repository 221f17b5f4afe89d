// What `headrace probe` measures: the grid of access pattern x block size x queue depth x threads,
// the test file and how long each point reads. Defaults follow seed 001 (AMD's DirectStorage talk:
// fio over block size x queue depth) and CrystalDiskMark's table in seed 000 (docs/probe.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "headrace/detail/enum_names.hpp"

namespace headrace::probe {

enum class Pattern : std::uint8_t {
  sequential,  // each thread streams its own contiguous region of the file
  random,      // uniformly random block-aligned offsets over the whole file (seeded)
};

inline constexpr detail::EnumNames<Pattern, 2> pattern_names{{{Pattern::sequential, "sequential"}, {Pattern::random, "random"}}};
[[nodiscard]] constexpr const char* to_string(Pattern pattern) noexcept { return detail::name_of(pattern_names, pattern); }
// Throws UsageError naming the choices.
[[nodiscard]] inline Pattern parse_pattern(const std::string& name) { return detail::parse_name(pattern_names, name, "probe pattern"); }

struct ProbeConfig {
  // A regular file or block device is read as it is; a directory gets <path>/headrace-probe.bin of file_size_bytes;
  // a missing path is created with file_size_bytes. Created files are kept and reused.
  std::string path;
  std::uint64_t file_size_bytes = std::uint64_t{4} << 30;
  std::vector<Pattern> patterns = {Pattern::sequential, Pattern::random};
  // Multiples of 4096 (O_DIRECT alignment).
  std::vector<std::uint64_t> block_sizes_bytes = {std::uint64_t{4} << 10, std::uint64_t{32} << 10,
                                                  std::uint64_t{128} << 10, std::uint64_t{1} << 20,
                                                  std::uint64_t{4} << 20};
  std::vector<unsigned> queue_depths = {1, 4, 16, 32, 64};
  std::vector<unsigned> thread_counts = {1, 2, 4, 8};
  // Timed points: reads start until seconds_per_point has passed and min_bytes_per_point have been
  // read, or until max_seconds_per_point has passed; reads in flight then finish and are counted.
  double seconds_per_point = 0.25;
  std::uint64_t min_bytes_per_point = std::uint64_t{16} << 20;
  double max_seconds_per_point = 2.0;
  // When > 0, every point reads exactly this many bytes (rounded up to whole blocks), untimed limits.
  std::uint64_t bytes_per_point = 0;
  // Destination memory of one point, all threads together; slots share buffers beyond it.
  std::uint64_t buffer_limit_bytes = std::uint64_t{1} << 30;
  // Seeds the test file's contents and the random offsets.
  std::uint64_t seed = 1;
  // A fallback (no io_uring, no O_DIRECT, a file in RAM) throws UnavailableError instead.
  bool strict = false;

  // Checks every value; throws UsageError naming the field.
  void validate() const;
};

// The full grid: 4 KiB..4 MiB x QD 1..64 x 1..8 threads, both patterns, a 4 GiB test file.
[[nodiscard]] ProbeConfig default_config(std::string path);
// A smaller grid for a first look: 4 KiB, 128 KiB, 1 MiB x QD 1, 16, 32 x 1, 4 threads, 256 MiB file.
[[nodiscard]] ProbeConfig quick_config(std::string path);

// One point of the grid.
struct GridPoint {
  Pattern pattern = Pattern::sequential;
  std::uint64_t block_size_bytes = 0;
  unsigned queue_depth = 0;
  unsigned threads = 0;
  friend bool operator==(const GridPoint&, const GridPoint&) = default;
};

// Every combination, in run order: threads, then queue depth, then block size, with the patterns
// alternating innermost (run_probe also starts each sequential point where the last one stopped).
[[nodiscard]] std::vector<GridPoint> expand_grid(const ProbeConfig& config);

}  // namespace headrace::probe
