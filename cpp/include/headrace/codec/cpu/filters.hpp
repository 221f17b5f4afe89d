// The filters of codec/filters_shared.hpp on the CPU, both ways: what a writer applies before a codec and
// what a machine without a GPU undoes after decoding (the GPU kernels run the same per-unit functions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "headrace/codec/filters_shared.hpp"

namespace headrace::codec::cpu {

// out = the transpose of `in`, a (rows x cols) matrix of `unit`-byte units; undo with rows and cols swapped.
// Throws UsageError unless both hold rows * cols * unit bytes.
void transpose(std::span<const std::byte> in, std::span<std::byte> out, std::uint64_t rows, std::uint64_t cols, std::uint32_t unit);

// Byte shuffle of elements of `width` bytes (a transpose of elements x bytes), and its inverse. A tail of
// bytes that is not a whole element is copied as it is.
void byte_shuffle(std::span<const std::byte> in, std::span<std::byte> out, std::uint32_t width);
void byte_unshuffle(std::span<const std::byte> in, std::span<std::byte> out, std::uint32_t width);

// Bit shuffle of elements of `width` bytes: the whole groups of 8 elements as bit planes, the rest copied.
void bit_shuffle(std::span<const std::byte> in, std::span<std::byte> out, std::uint32_t width);
void bit_unshuffle(std::span<const std::byte> in, std::span<std::byte> out, std::uint32_t width);

// Delta or xor along rows of `row` elements of `width` bytes (1, 2, 4, 8); undone in place.
void difference(std::span<const std::byte> in, std::span<std::byte> out, std::uint64_t row, std::uint32_t width,
                filters::Difference kind);
void undifference(std::span<std::byte> data, std::uint64_t row, std::uint32_t width, filters::Difference kind);

}  // namespace headrace::codec::cpu
