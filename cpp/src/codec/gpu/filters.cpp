#include "headrace/codec/gpu/filters.hpp"

#include "headrace/error.hpp"
#include "filter_kernel_image.hpp"

namespace headrace::codec::gpu {
namespace {

constexpr unsigned block_threads = 256;

}  // namespace

FilterKernels::FilterKernels(int device)
    : device_(device),
      module_((device_.make_current(), filter_kernel_image()), "the codec filters' kernels (filter_kernels.cu)",
              "decode on the CPU (HEADRACE_DECODE_ON=cpu)"),
      transpose_(module_.function("headrace_filter_transpose")),
      bit_unshuffle_(module_.function("headrace_filter_bit_unshuffle")),
      undifference_(module_.function("headrace_filter_undifference")) {}

void FilterKernels::transpose(headrace::gpu::CUdeviceptr in, headrace::gpu::CUdeviceptr out, std::uint64_t rows, std::uint64_t cols,
                              std::uint32_t unit, headrace::gpu::CUstream stream) const {
  HEADRACE_EXPECT(unit >= 1 && in != out, UsageError, "transpose: units of at least one byte, out of place");
  device_.make_current();
  auto* source = reinterpret_cast<const unsigned char*>(in);
  auto* target = reinterpret_cast<unsigned char*>(out);
  unsigned long long r = rows, c = cols;
  unsigned u = unit;
  void* args[] = {&source, &target, &r, &c, &u};
  headrace::gpu::launch_1d(transpose_, rows * cols, block_threads, stream, args);
}

void FilterKernels::bit_unshuffle(headrace::gpu::CUdeviceptr planes, headrace::gpu::CUdeviceptr out, std::uint64_t n,
                                  std::uint32_t width, headrace::gpu::CUstream stream) const {
  HEADRACE_EXPECT(n % 8 == 0 && width >= 1 && width <= 64 && planes != out, UsageError,
                  "bit unshuffle: whole groups of 8 elements of 1..64 bytes, out of place");
  device_.make_current();
  auto* source = reinterpret_cast<const unsigned char*>(planes);
  auto* target = reinterpret_cast<unsigned char*>(out);
  unsigned long long count = n;
  unsigned w = width;
  void* args[] = {&source, &target, &count, &w};
  headrace::gpu::launch_1d(bit_unshuffle_, n * width, block_threads, stream, args);
}

void FilterKernels::copy(headrace::gpu::CUdeviceptr in, headrace::gpu::CUdeviceptr out, std::uint64_t size,
                         headrace::gpu::CUstream stream) const {
  if (size == 0 || in == out) return;
  device_.make_current();
  headrace::gpu::check(headrace::gpu::driver()->cuMemcpyDtoDAsync(out, in, size, stream), "cuMemcpyDtoDAsync",
                       "bytes a filter keeps");
}

void FilterKernels::undifference(headrace::gpu::CUdeviceptr data, std::uint64_t n, std::uint64_t row, std::uint32_t width,
                                 filters::Difference kind, headrace::gpu::CUstream stream) const {
  HEADRACE_EXPECT(row >= 1 && (width == 1 || width == 2 || width == 4 || width == 8), UsageError,
                  "delta: rows of at least one element of 1, 2, 4 or 8 bytes");
  device_.make_current();
  auto* target = reinterpret_cast<unsigned char*>(data);
  unsigned long long count = n, r = row;
  unsigned w = width, k = static_cast<unsigned>(kind);
  void* args[] = {&target, &count, &r, &w, &k};
  headrace::gpu::launch_1d(undifference_, (n + row - 1) / row * 32, block_threads, stream, args);  // a warp per row
}

}  // namespace headrace::codec::gpu
