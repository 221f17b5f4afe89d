// The filters of issue 19 on the CPU: known small cases, round trips over odd sizes and widths, the bit
// shuffle against a bit matrix built by hand, and why they exist: a smooth float field compresses far
// better shuffled than plain under zstd.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "headrace/codec/cpu/chunk_codec.hpp"
#include "headrace/codec/cpu/filters.hpp"
#include "headrace/error.hpp"

namespace headrace::codec::cpu {
namespace {

using filters::Difference;

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng() & 0xffu);
  return out;
}

std::vector<std::byte> of(std::initializer_list<int> values) {
  std::vector<std::byte> out;
  for (int v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

TEST(Filters, ByteShuffleGroupsTheBytesOfEachSignificanceAndKeepsTheTail) {
  const auto in = of({1, 2, 3, 4, 5, 6, 7});  // three 2-byte elements and a tail byte
  std::vector<std::byte> out(in.size()), back(in.size());
  byte_shuffle(in, out, 2);
  EXPECT_EQ(out, of({1, 3, 5, 2, 4, 6, 7}));
  byte_unshuffle(out, back, 2);
  EXPECT_EQ(back, in);
}

TEST(Filters, SplitComponentsIsATransposeOfElementsByComponents) {
  // Two elements of three float32 components: x0 y0 z0 x1 y1 z1 -> x0 x1 y0 y1 z0 z1.
  const std::vector<float> xyz{1, 2, 3, 4, 5, 6};
  std::vector<float> split(6), back(6);
  const auto as_bytes = [](auto& v) { return std::as_writable_bytes(std::span(v)); };
  transpose(std::as_bytes(std::span(xyz)), as_bytes(split), 2, 3, 4);
  EXPECT_EQ(split, (std::vector<float>{1, 4, 2, 5, 3, 6}));
  transpose(std::as_bytes(std::span(split)), as_bytes(back), 3, 2, 4);
  EXPECT_EQ(back, xyz);
}

TEST(Filters, BitShuffleMakesBitPlanesAsABitMatrixTransposeWould) {
  for (std::uint32_t width : {1u, 2u, 4u, 8u}) {
    const std::size_t n = 27;  // 24 in planes, 3 in the tail
    const auto in = random_bytes(n * width, width);
    std::vector<std::byte> out(in.size()), back(in.size());
    bit_shuffle(in, out, width);
    const std::size_t whole = 24;
    for (std::size_t plane = 0; plane < 8 * width; ++plane)
      for (std::size_t i = 0; i < whole; ++i) {
        const int expected = (std::to_integer<int>(in[i * width + plane / 8]) >> (plane % 8)) & 1;
        const int got = (std::to_integer<int>(out[plane * (whole / 8) + i / 8]) >> (i % 8)) & 1;
        ASSERT_EQ(got, expected) << "width " << width << " plane " << plane << " element " << i;
      }
    EXPECT_TRUE(std::equal(in.end() - 3 * width, in.end(), out.end() - 3 * width));
    bit_unshuffle(out, back, width);
    EXPECT_EQ(back, in) << "width " << width;
  }
}

TEST(Filters, DeltaAndXorRoundTripEveryWidthAndRowLengthBitForBit) {
  for (std::uint32_t width : {1u, 2u, 4u, 8u})
    for (std::uint64_t row : {1u, 3u, 7u, 1000u})
      for (Difference kind : {Difference::delta, Difference::xor_}) {
        const auto in = random_bytes(61 * width, width * 31 + static_cast<unsigned>(row));
        std::vector<std::byte> out(in.size());
        difference(in, out, row, width, kind);
        undifference(out, row, width, kind);
        EXPECT_EQ(out, in) << "width " << width << " row " << row;
      }
  // Known values: 10 12 15 | 7 9 as uint16 in rows of 3.
  const std::vector<std::uint16_t> values{10, 12, 15, 7, 9};
  std::vector<std::uint16_t> deltas(5);
  difference(std::as_bytes(std::span(values)), std::as_writable_bytes(std::span(deltas)), 3, 2, Difference::delta);
  EXPECT_EQ(deltas, (std::vector<std::uint16_t>{10, 2, 3, 7, 2}));
  difference(std::as_bytes(std::span(values)), std::as_writable_bytes(std::span(deltas)), 3, 2, Difference::xor_);
  EXPECT_EQ(deltas, (std::vector<std::uint16_t>{10, 12 ^ 10, 15 ^ 12, 7, 9 ^ 7}));
}

TEST(Filters, RefuseSizesThatDoNotFit) {
  std::vector<std::byte> a(12), b(8);
  EXPECT_THROW(byte_shuffle(a, b, 4), UsageError);
  EXPECT_THROW(transpose(a, a, 5, 2, 1), UsageError);
  EXPECT_THROW(difference(a, a, 2, 3, Difference::delta), UsageError);
  EXPECT_THROW(difference(std::span<const std::byte>(a).first(10), std::span<std::byte>(a).first(10), 2, 4, Difference::xor_),
               UsageError);
}

TEST(Filters, AShuffledSmoothFloatFieldCompressesFarBetterUnderZstd) {
  std::vector<float> field(64 * 64 * 64);
  for (std::size_t i = 0; i < field.size(); ++i) {
    const float x = static_cast<float>(i % 64) / 64, y = static_cast<float>(i / 64 % 64) / 64, z = static_cast<float>(i / 4096) / 64;
    field[i] = std::exp(-((x - 0.5f) * (x - 0.5f) + (y - 0.4f) * (y - 0.4f) + (z - 0.6f) * (z - 0.6f)) * 8.0f);
  }
  const auto raw = std::as_bytes(std::span(field));
  std::vector<std::byte> shuffled(raw.size());
  byte_shuffle(raw, shuffled, 4);
  const double plain = static_cast<double>(encode(format::CodecId::zstd, 0, raw).size()) / static_cast<double>(raw.size());
  const double filtered = static_cast<double>(encode(format::CodecId::zstd, 0, shuffled).size()) / static_cast<double>(raw.size());
  EXPECT_LT(filtered, 0.8 * plain) << "plain " << plain << ", shuffled " << filtered;
}

}  // namespace
}  // namespace headrace::codec::cpu
