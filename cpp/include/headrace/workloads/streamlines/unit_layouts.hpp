// Where a grid point's velocity is stored, for the two layouts of seed 002 (3.1): the unit (native
// block, or run of a Hilbert-ordered field) holding it and its place in the unit. HEADRACE_HD: the GPU
// tracer's kernel locates points with the same code as the CPU samplers.
#pragma once

#include <cstdint>

#include "headrace/workloads/streamlines/hilbert.hpp"
#include "headrace/workloads/streamlines/streamline_math.hpp"

namespace headrace::workloads::streamlines {

// Units along an axis of `dims` points: the last one partial when `side` does not divide the grid (it is
// stored whole, padded past the grid's edge, so every unit has one size and one place).
[[nodiscard]] HEADRACE_HD inline std::uint64_t units_along(std::int32_t dims, std::int32_t side) {
  return static_cast<std::uint64_t>((dims + side - 1) / side);
}

struct BlockLayout {
  GridGeometry grid;
  std::int32_t block[3] = {1, 1, 1};

  [[nodiscard]] HEADRACE_HD const GridGeometry& geometry() const { return grid; }
  // The unit holding point (i, j, k), and the point's element within it.
  HEADRACE_HD std::uint64_t unit_of(std::int32_t i, std::int32_t j, std::int32_t k, std::uint64_t& element) const {
    const std::uint64_t nbx = units_along(grid.dims[0], block[0]);
    const std::uint64_t nby = units_along(grid.dims[1], block[1]);
    element = static_cast<std::uint64_t>(i % block[0]) +
              static_cast<std::uint64_t>(block[0]) * (static_cast<std::uint64_t>(j % block[1]) +
                                                      static_cast<std::uint64_t>(block[1]) * static_cast<std::uint64_t>(k % block[2]));
    return static_cast<std::uint64_t>(i / block[0]) + nbx * (static_cast<std::uint64_t>(j / block[1]) +
                                                             nby * static_cast<std::uint64_t>(k / block[2]));
  }
  [[nodiscard]] std::uint64_t block_points() const noexcept {
    return static_cast<std::uint64_t>(block[0]) * block[1] * block[2];
  }
  [[nodiscard]] std::uint64_t block_count() const noexcept {
    return units_along(grid.dims[0], block[0]) * units_along(grid.dims[1], block[1]) * units_along(grid.dims[2], block[2]);
  }
  // Throws UsageError for a grid of fewer than 2 points along an axis or a block of none.
  void check() const;
};

inline constexpr std::uint64_t point_bytes = 12;  // float32 x 3
inline constexpr std::uint64_t page_bytes = 4096;

struct HilbertLayout {
  GridGeometry grid;
  std::uint32_t bits = 1;  // partitions of 2^bits points a side

  [[nodiscard]] HEADRACE_HD std::uint32_t partition() const { return 1u << bits; }
  // Where point (i, j, k) is stored, counted in points from the field's start.
  HEADRACE_HD std::uint64_t position_of(std::int32_t i, std::int32_t j, std::int32_t k) const {
    const std::uint32_t p = partition();
    const std::uint64_t npx = units_along(grid.dims[0], static_cast<std::int32_t>(p));
    const std::uint64_t npy = units_along(grid.dims[1], static_cast<std::int32_t>(p));
    const std::uint64_t part = static_cast<std::uint64_t>(i) / p + npx * (static_cast<std::uint64_t>(j) / p +
                                                                           npy * (static_cast<std::uint64_t>(k) / p));
    const std::uint64_t cube = static_cast<std::uint64_t>(p) * p * p;
    return part * cube + hilbert_index(static_cast<std::uint32_t>(i) % p, static_cast<std::uint32_t>(j) % p,
                                       static_cast<std::uint32_t>(k) % p, bits);
  }
  void check() const;  // UsageError for bits outside 1..20 or a grid of fewer than 2 points along an axis
};

// A Hilbert-ordered field cut into units of unit_points points (the cache's unit, chosen at run time).
struct HilbertUnits {
  HilbertLayout layout;
  std::uint64_t unit_points = 1;

  [[nodiscard]] HEADRACE_HD const GridGeometry& geometry() const { return layout.grid; }
  HEADRACE_HD std::uint64_t unit_of(std::int32_t i, std::int32_t j, std::int32_t k, std::uint64_t& element) const {
    const std::uint64_t position = layout.position_of(i, j, k);
    element = position % unit_points;
    return position / unit_points;
  }
};

}  // namespace headrace::workloads::streamlines
