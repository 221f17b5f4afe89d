// The codec filters undone on a GPU (codec/filters_shared.hpp; the CPU twins are codec/cpu/filters.hpp):
// asynchronous on the caller's stream, over device memory, so that a chunk decoded by nvCOMP is
// unfiltered where it landed.
#pragma once

#include <cstdint>

#include "headrace/codec/filters_shared.hpp"
#include "headrace/gpu/device.hpp"
#include "headrace/gpu/kernel_module.hpp"

namespace headrace::codec::gpu {

class FilterKernels {
 public:
  // Loads the kernels on `device`. Throws UnavailableError without a GPU or without the kernels.
  explicit FilterKernels(int device);

  // out = the transpose of `in` (rows x cols units of `unit` bytes); undoes split components and, with
  // unit 1, the byte shuffle of the whole elements (rows = element bytes, cols = elements).
  void transpose(headrace::gpu::CUdeviceptr in, headrace::gpu::CUdeviceptr out, std::uint64_t rows, std::uint64_t cols,
                 std::uint32_t unit, headrace::gpu::CUstream stream) const;
  // The elements (a whole number of groups of 8, n of them) back from their bit planes.
  void bit_unshuffle(headrace::gpu::CUdeviceptr planes, headrace::gpu::CUdeviceptr out, std::uint64_t n, std::uint32_t width,
                     headrace::gpu::CUstream stream) const;
  // Copies size bytes (none: nothing), for the bytes a filter leaves as they are.
  void copy(headrace::gpu::CUdeviceptr in, headrace::gpu::CUdeviceptr out, std::uint64_t size, headrace::gpu::CUstream stream) const;
  // Running sums (or xors) along rows of `row` elements of `width` bytes, in place.
  void undifference(headrace::gpu::CUdeviceptr data, std::uint64_t n, std::uint64_t row, std::uint32_t width,
                    filters::Difference kind, headrace::gpu::CUstream stream) const;

 private:
  headrace::gpu::Device device_;
  headrace::gpu::KernelModule module_;
  headrace::gpu::CUfunction transpose_, bit_unshuffle_, undifference_;
};

}  // namespace headrace::codec::gpu
