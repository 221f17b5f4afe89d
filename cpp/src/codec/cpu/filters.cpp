#include "headrace/codec/cpu/filters.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "headrace/error.hpp"

namespace headrace::codec::cpu {
namespace {

const std::uint8_t* bytes(std::span<const std::byte> s) { return reinterpret_cast<const std::uint8_t*>(s.data()); }
std::uint8_t* bytes(std::span<std::byte> s) { return reinterpret_cast<std::uint8_t*>(s.data()); }

void expect_same_size(std::span<const std::byte> in, std::span<std::byte> out, const char* filter) {
  HEADRACE_EXPECT(in.size() == out.size(), UsageError,
                  std::string(filter) + ": input and output sizes differ (" + std::to_string(in.size()) + " and " +
                      std::to_string(out.size()) + " bytes)");
}

// The transpose of an 8 x 8 bit matrix held in a word, byte i being row i (Hacker's Delight 7-3): bit
// j of byte i lands at bit i of byte j. A group of 8 elements' byte b to its 8 bit planes and back: the
// bytes filters::bitshuffled_byte and bitunshuffled_byte define, 64 bits at a time.
std::uint64_t transposed_bits(std::uint64_t x) {
  std::uint64_t t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAull;
  x ^= t ^ (t << 7);
  t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCull;
  x ^= t ^ (t << 14);
  t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ull;
  return x ^ t ^ (t << 28);
}

void expect_width(std::uint32_t width, const char* filter, bool integer) {
  const bool ok = integer ? (width == 1 || width == 2 || width == 4 || width == 8) : (width >= 1 && width <= 64);
  HEADRACE_EXPECT(ok, UsageError,
                  std::string(filter) + ": element width " + std::to_string(width) + " bytes: expected " +
                      (integer ? "1, 2, 4 or 8" : "1..64"));
}

}  // namespace

void transpose(std::span<const std::byte> in, std::span<std::byte> out, std::uint64_t rows, std::uint64_t cols, std::uint32_t unit) {
  expect_same_size(in, out, "transpose");
  HEADRACE_EXPECT(unit >= 1 && rows * cols * unit == in.size(), UsageError,
                  "transpose: " + std::to_string(rows) + " x " + std::to_string(cols) + " units of " + std::to_string(unit) +
                      " bytes do not make " + std::to_string(in.size()) + " bytes");
  // Input order (sequential reads, `cols` output streams), the units of the common sizes copied by a
  // fixed-size memcpy: the map of filters::transposed_source, walked from its source side.
  const auto walk = [&](auto unit_bytes) {
    constexpr std::uint32_t u = decltype(unit_bytes)::value;
    const std::uint8_t* source = bytes(in);
    std::uint8_t* target = bytes(out);
    for (std::uint64_t r = 0; r < rows; ++r)
      for (std::uint64_t c = 0; c < cols; ++c) std::memcpy(target + (c * rows + r) * u, source + (r * cols + c) * u, u);
  };
  switch (unit) {
    case 1: walk(std::integral_constant<std::uint32_t, 1>{}); return;
    case 2: walk(std::integral_constant<std::uint32_t, 2>{}); return;
    case 4: walk(std::integral_constant<std::uint32_t, 4>{}); return;
    case 8: walk(std::integral_constant<std::uint32_t, 8>{}); return;
    default: break;
  }
  const std::uint64_t units = rows * cols;
  for (std::uint64_t o = 0; o < units; ++o)
    std::memcpy(bytes(out) + o * unit, bytes(in) + filters::transposed_source(o, rows, cols) * unit, unit);
}

void byte_shuffle(std::span<const std::byte> in, std::span<std::byte> out, std::uint32_t width) {
  expect_same_size(in, out, "byte shuffle");
  expect_width(width, "byte shuffle", false);
  const std::uint64_t n = in.size() / width, whole = n * width;
  transpose(in.first(whole), out.first(whole), n, width, 1);
  std::copy(in.begin() + static_cast<std::ptrdiff_t>(whole), in.end(), out.begin() + static_cast<std::ptrdiff_t>(whole));
}

void byte_unshuffle(std::span<const std::byte> in, std::span<std::byte> out, std::uint32_t width) {
  expect_same_size(in, out, "byte unshuffle");
  expect_width(width, "byte unshuffle", false);
  const std::uint64_t n = in.size() / width, whole = n * width;
  transpose(in.first(whole), out.first(whole), width, n, 1);
  std::copy(in.begin() + static_cast<std::ptrdiff_t>(whole), in.end(), out.begin() + static_cast<std::ptrdiff_t>(whole));
}

void bit_shuffle(std::span<const std::byte> in, std::span<std::byte> out, std::uint32_t width) {
  expect_same_size(in, out, "bit shuffle");
  expect_width(width, "bit shuffle", false);
  const std::uint64_t n = in.size() / width / 8 * 8, planes_bytes = n * width, plane_bytes = n / 8;
  for (std::uint64_t g = 0; g < plane_bytes; ++g) {
    for (std::uint32_t b = 0; b < width; ++b) {
      std::uint64_t x = 0;
      for (std::uint32_t j = 0; j < 8; ++j) x |= std::uint64_t{bytes(in)[(8 * g + j) * width + b]} << (8 * j);
      x = transposed_bits(x);
      for (std::uint32_t q = 0; q < 8; ++q) bytes(out)[(8 * std::uint64_t{b} + q) * plane_bytes + g] = static_cast<std::uint8_t>(x >> (8 * q));
    }
  }
  std::copy(in.begin() + static_cast<std::ptrdiff_t>(planes_bytes), in.end(), out.begin() + static_cast<std::ptrdiff_t>(planes_bytes));
}

void bit_unshuffle(std::span<const std::byte> in, std::span<std::byte> out, std::uint32_t width) {
  expect_same_size(in, out, "bit unshuffle");
  expect_width(width, "bit unshuffle", false);
  const std::uint64_t n = in.size() / width / 8 * 8, planes_bytes = n * width, plane_bytes = n / 8;
  for (std::uint64_t g = 0; g < plane_bytes; ++g) {
    for (std::uint32_t b = 0; b < width; ++b) {
      std::uint64_t x = 0;
      for (std::uint32_t q = 0; q < 8; ++q) x |= std::uint64_t{bytes(in)[(8 * std::uint64_t{b} + q) * plane_bytes + g]} << (8 * q);
      x = transposed_bits(x);
      for (std::uint32_t j = 0; j < 8; ++j) bytes(out)[(8 * g + j) * width + b] = static_cast<std::uint8_t>(x >> (8 * j));
    }
  }
  std::copy(in.begin() + static_cast<std::ptrdiff_t>(planes_bytes), in.end(), out.begin() + static_cast<std::ptrdiff_t>(planes_bytes));
}

void difference(std::span<const std::byte> in, std::span<std::byte> out, std::uint64_t row, std::uint32_t width,
                filters::Difference kind) {
  const char* name = kind == filters::Difference::delta ? "delta" : "xor";
  expect_same_size(in, out, name);
  expect_width(width, name, true);
  HEADRACE_EXPECT(row >= 1 && in.size() % width == 0, UsageError,
                  std::string(name) + ": rows of at least one element, and whole elements of " + std::to_string(width) + " bytes");
  const std::uint64_t n = in.size() / width;
  for (std::uint64_t i = 0; i < n; ++i)
    filters::store_unit(bytes(out) + i * width, width, filters::differenced_unit(bytes(in), i, row, width, kind));
}

void undifference(std::span<std::byte> data, std::uint64_t row, std::uint32_t width, filters::Difference kind) {
  const char* name = kind == filters::Difference::delta ? "delta" : "xor";
  expect_width(width, name, true);
  HEADRACE_EXPECT(row >= 1 && data.size() % width == 0, UsageError,
                  std::string(name) + ": rows of at least one element, and whole elements of " + std::to_string(width) + " bytes");
  const std::uint64_t n = data.size() / width;
  for (std::uint64_t r = 0; r * row < n; ++r) filters::undifference_row(bytes(data), r, row, n, width, kind);
}

}  // namespace headrace::codec::cpu
