// Filters (issue 19): reversible transforms of a chunk's bytes run before a codec when writing and after
// it when reading, so that float data compresses (a byte shuffle takes a smooth float volume from 0.91 of
// its size to 0.38 under zstd). HEADRACE_HD: the CUDA kernels and their CPU twins run this code. Each
// function computes one unit of output from the input (a byte, an element, a row), so a kernel gives a
// thread to each and the CPU loops over them.
//
//   transpose    a (rows x cols) matrix of units: split components (xyz xyz -> xx yy zz: rows = elements,
//                cols = components, unit = a component) and byte shuffle (cols = element bytes, unit = 1)
//   bit shuffle  the bits of n elements of w bytes as 8w planes of n bits (n a multiple of 8; a tail of
//                n mod 8 elements stays as it is, after the planes)
//   delta, xor   along rows of `row` elements of w bytes (1, 2, 4, 8) taken as unsigned integers, so floats
//                round-trip bit for bit: each element minus (or xor) the one before it in its row; decoding
//                is a running sum (or xor) along the row
#pragma once

#include <cstdint>

#include "headrace/detail/host_device.hpp"

namespace headrace::codec::filters {

// The input unit that lands at output unit `out` of a transpose: out = c * rows + r takes in = r * cols + c.
[[nodiscard]] HEADRACE_HD inline std::uint64_t transposed_source(std::uint64_t out, std::uint64_t rows, std::uint64_t cols) {
  return (out % rows) * cols + out / rows;
}

// Output byte k of the bit shuffle of n elements (n / 8 bytes a plane): plane p = k / (n / 8) holds bit p
// of each element, bit j of byte k being element 8 (k mod n / 8) + j. Bit p of an element: bit p mod 8 of
// its byte p / 8 (little-endian).
[[nodiscard]] HEADRACE_HD inline std::uint8_t bitshuffled_byte(const std::uint8_t* in, std::uint64_t k, std::uint64_t n,
                                                               std::uint32_t width) {
  const std::uint64_t plane_bytes = n / 8;
  const std::uint64_t plane = k / plane_bytes, first = 8 * (k % plane_bytes);
  const std::uint32_t byte = static_cast<std::uint32_t>(plane / 8), bit = static_cast<std::uint32_t>(plane % 8);
  std::uint8_t out = 0;
  for (std::uint32_t j = 0; j < 8; ++j) out |= static_cast<std::uint8_t>(((in[(first + j) * width + byte] >> bit) & 1u) << j);
  return out;
}

// Byte b of element i, back from the planes: its bit q is bit (i mod 8) of the planes' byte of plane 8b + q.
[[nodiscard]] HEADRACE_HD inline std::uint8_t bitunshuffled_byte(const std::uint8_t* planes, std::uint64_t i, std::uint32_t b,
                                                                 std::uint64_t n) {
  const std::uint64_t plane_bytes = n / 8;
  std::uint8_t out = 0;
  for (std::uint32_t q = 0; q < 8; ++q)
    out |= static_cast<std::uint8_t>(((planes[(8 * static_cast<std::uint64_t>(b) + q) * plane_bytes + i / 8] >> (i % 8)) & 1u) << q);
  return out;
}

// An element of `width` bytes (1, 2, 4 or 8) as an unsigned integer, little-endian, at any alignment.
[[nodiscard]] HEADRACE_HD inline std::uint64_t load_unit(const std::uint8_t* p, std::uint32_t width) {
  std::uint64_t v = 0;
  for (std::uint32_t b = 0; b < width; ++b) v |= static_cast<std::uint64_t>(p[b]) << (8 * b);
  return v;
}

HEADRACE_HD inline void store_unit(std::uint8_t* p, std::uint32_t width, std::uint64_t v) {
  for (std::uint32_t b = 0; b < width; ++b) p[b] = static_cast<std::uint8_t>(v >> (8 * b));
}

[[nodiscard]] HEADRACE_HD inline std::uint64_t unit_mask(std::uint32_t width) {
  return width >= 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * width)) - 1;
}

enum class Difference : std::uint8_t { delta, xor_ };

// Element i of the encoded stream: itself at the start of a row, else itself minus (or xor) the one before.
[[nodiscard]] HEADRACE_HD inline std::uint64_t differenced_unit(const std::uint8_t* in, std::uint64_t i, std::uint64_t row,
                                                                std::uint32_t width, Difference kind) {
  const std::uint64_t x = load_unit(in + i * width, width);
  if (i % row == 0) return x;
  const std::uint64_t before = load_unit(in + (i - 1) * width, width);
  return (kind == Difference::delta ? x - before : x ^ before) & unit_mask(width);
}

// The running value after one more element: a sum (delta) or an xor, in `width` bytes. Associative with
// 0 as identity, so a row decodes as an inclusive scan in any grouping (the GPU scans a warp's tiles).
[[nodiscard]] HEADRACE_HD inline std::uint64_t combine_units(std::uint64_t running, std::uint64_t d, std::uint32_t width,
                                                             Difference kind) {
  return (kind == Difference::delta ? running + d : running ^ d) & unit_mask(width);
}

// Decodes row r (elements r * row .. min(n, (r + 1) * row) - 1) in place: the inclusive scan of the row
// (its first element is stored as it is, the identity's combination with it).
HEADRACE_HD inline void undifference_row(std::uint8_t* data, std::uint64_t r, std::uint64_t row, std::uint64_t n,
                                         std::uint32_t width, Difference kind) {
  const std::uint64_t first = r * row, last = first + row < n ? first + row : n;
  std::uint64_t running = 0;
  for (std::uint64_t i = first; i < last; ++i) {
    running = combine_units(running, load_unit(data + i * width, width), width, kind);
    store_unit(data + i * width, width, running);
  }
}

}  // namespace headrace::codec::filters
