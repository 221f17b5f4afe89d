// The codec filters undone on the GPU give back, bit for bit, what their CPU twins filtered.
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <vector>

#include "headrace/codec/cpu/filters.hpp"
#include "headrace/codec/gpu/filters.hpp"
#include "headrace/gpu/cuda_driver.hpp"
#include "headrace/gpu/memory.hpp"
#include "headrace/gpu/stream.hpp"

namespace headrace::codec {
namespace {

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng() & 0xffu);
  return out;
}

class GpuFilters : public ::testing::Test {
 protected:
  void SetUp() override {
    if (headrace::gpu::device_count() == 0)
      GTEST_SKIP() << "no GPU: " << (headrace::gpu::driver() ? "no device" : headrace::gpu::why_no_driver());
    kernels_.emplace(0);
    stream_.emplace();
  }
  headrace::gpu::DeviceBuffer upload(const std::vector<std::byte>& bytes) {
    headrace::gpu::DeviceBuffer buffer(bytes.size());
    headrace::gpu::check(headrace::gpu::require_driver().cuMemcpyHtoDAsync(buffer.pointer(), bytes.data(), bytes.size(), stream_->handle()),
                         "cuMemcpyHtoDAsync");
    stream_->synchronize();
    return buffer;
  }
  std::vector<std::byte> download(const headrace::gpu::DeviceBuffer& buffer, std::size_t size) {
    stream_->synchronize();
    std::vector<std::byte> out(size);
    headrace::gpu::copy_to_host(out.data(), buffer.pointer(), size);
    return out;
  }
  std::optional<gpu::FilterKernels> kernels_;
  std::optional<headrace::gpu::Stream> stream_;  // made once a GPU is known to be there
};

TEST_F(GpuFilters, UndoByteShuffleSplitComponentsBitShuffleDeltaAndXor) {
  const std::uint64_t n = 4096 + 64;  // whole groups of 8
  for (std::uint32_t width : {1u, 2u, 4u, 8u}) {
    const auto original = random_bytes(n * width, width);
    std::vector<std::byte> filtered(original.size());
    // Byte shuffle: rows = elements, cols = bytes; undone by the transpose back.
    cpu::byte_shuffle(original, filtered, width);
    auto in = upload(filtered);
    headrace::gpu::DeviceBuffer out(original.size());
    kernels_->transpose(in.pointer(), out.pointer(), width, n, 1, stream_->handle());
    EXPECT_EQ(download(out, original.size()), original) << "byte shuffle, width " << width;
    // Bit shuffle.
    cpu::bit_shuffle(original, filtered, width);
    in = upload(filtered);
    kernels_->bit_unshuffle(in.pointer(), out.pointer(), n, width, stream_->handle());
    EXPECT_EQ(download(out, original.size()), original) << "bit shuffle, width " << width;
    // Delta and xor along rows of 100 elements, of 1000 (a warp's tiles of 256 carried on), of all.
    for (const std::uint64_t row : {std::uint64_t{100}, std::uint64_t{1000}, n}) {
      for (auto kind : {filters::Difference::delta, filters::Difference::xor_}) {
        cpu::difference(original, filtered, row, width, kind);
        in = upload(filtered);
        kernels_->undifference(in.pointer(), n, row, width, kind, stream_->handle());
        EXPECT_EQ(download(in, original.size()), original) << "difference, width " << width << ", rows of " << row;
      }
    }
  }
  // Split components: 1000 elements of three 4-byte components.
  const auto xyz = random_bytes(1000 * 12, 9);
  std::vector<std::byte> split(xyz.size());
  cpu::transpose(xyz, split, 1000, 3, 4);
  auto in = upload(split);
  headrace::gpu::DeviceBuffer out(xyz.size());
  kernels_->transpose(in.pointer(), out.pointer(), 3, 1000, 4, stream_->handle());
  EXPECT_EQ(download(out, xyz.size()), xyz);
}

}  // namespace
}  // namespace headrace::codec
