// The 3-D Hilbert curve over a cube of 2^bits points a side (seed 002's optimized layout): the index
// of a point and the point of an index, after J. Skilling, "Programming the Hilbert curve" (AIP
// Conf. Proc. 707, 2004): axes <-> "transpose" by Gray-code steps, then bit interleaving. Consecutive
// indices are neighbouring points, which is the locality a streamline's walk through the file needs.
#pragma once

#include <cstdint>

#include "headrace/detail/host_device.hpp"

namespace headrace::workloads::streamlines {

// Index along the curve (0 .. 8^bits - 1) of point (x, y, z), each below 2^bits; bits in 1..21.
HEADRACE_HD inline std::uint64_t hilbert_index(std::uint32_t x, std::uint32_t y, std::uint32_t z, unsigned bits) {
  std::uint32_t axes[3] = {x, y, z};
  const std::uint32_t top = 1u << (bits - 1);
  for (std::uint32_t q = top; q > 1; q >>= 1) {  // undo the curve's rotations and reflections
    const std::uint32_t low = q - 1;
    for (int i = 0; i < 3; ++i) {
      if (axes[i] & q) {
        axes[0] ^= low;
      } else {
        const std::uint32_t t = (axes[0] ^ axes[i]) & low;
        axes[0] ^= t;
        axes[i] ^= t;
      }
    }
  }
  for (int i = 1; i < 3; ++i) axes[i] ^= axes[i - 1];  // Gray encode
  std::uint32_t t = 0;
  for (std::uint32_t q = top; q > 1; q >>= 1)
    if (axes[2] & q) t ^= q - 1;
  for (int i = 0; i < 3; ++i) axes[i] ^= t;
  std::uint64_t index = 0;  // interleave: the highest bit of x, of y, of z, then the next ...
  for (int bit = static_cast<int>(bits) - 1; bit >= 0; --bit)
    for (int i = 0; i < 3; ++i) index = (index << 1) | ((axes[i] >> bit) & 1u);
  return index;
}

// The point at index along the curve: the inverse of hilbert_index.
HEADRACE_HD inline void hilbert_point(std::uint64_t index, unsigned bits, std::uint32_t point[3]) {
  std::uint32_t axes[3] = {0, 0, 0};
  for (int bit = static_cast<int>(bits) - 1; bit >= 0; --bit)
    for (int i = 0; i < 3; ++i) axes[i] |= static_cast<std::uint32_t>((index >> (3 * bit + 2 - i)) & 1u) << bit;
  const std::uint32_t t = axes[2] >> 1;  // Gray decode
  for (int i = 2; i > 0; --i) axes[i] ^= axes[i - 1];
  axes[0] ^= t;
  const std::uint32_t end = 2u << (bits - 1);
  for (std::uint32_t q = 2; q != end; q <<= 1) {  // redo the rotations and reflections
    const std::uint32_t low = q - 1;
    for (int i = 2; i >= 0; --i) {
      if (axes[i] & q) {
        axes[0] ^= low;
      } else {
        const std::uint32_t s = (axes[0] ^ axes[i]) & low;
        axes[0] ^= s;
        axes[i] ^= s;
      }
    }
  }
  point[0] = axes[0], point[1] = axes[1], point[2] = axes[2];
}

}  // namespace headrace::workloads::streamlines
