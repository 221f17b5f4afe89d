#include "headrace/codec/cpu/filters.hpp"

#include <algorithm>
#include <cstring>
#include <string>

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
  const std::uint64_t n = in.size() / width / 8 * 8, planes_bytes = n * width;
  for (std::uint64_t k = 0; k < planes_bytes; ++k) bytes(out)[k] = filters::bitshuffled_byte(bytes(in), k, n, width);
  std::copy(in.begin() + static_cast<std::ptrdiff_t>(planes_bytes), in.end(), out.begin() + static_cast<std::ptrdiff_t>(planes_bytes));
}

void bit_unshuffle(std::span<const std::byte> in, std::span<std::byte> out, std::uint32_t width) {
  expect_same_size(in, out, "bit unshuffle");
  expect_width(width, "bit unshuffle", false);
  const std::uint64_t n = in.size() / width / 8 * 8, planes_bytes = n * width;
  for (std::uint64_t i = 0; i < n; ++i)
    for (std::uint32_t b = 0; b < width; ++b) bytes(out)[i * width + b] = filters::bitunshuffled_byte(bytes(in), i, b, n);
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
