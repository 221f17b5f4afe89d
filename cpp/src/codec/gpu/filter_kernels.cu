// The codec filters' decoding kernels (codec/filters_shared.hpp holds the math, shared with the CPU
// twins): a thread per output unit (transpose, bit unshuffle) or per row (the running sums). Built into a
// fatbin by nvcc and loaded through the driver at run time.
#include "headrace/codec/filters_shared.hpp"

namespace hf = headrace::codec::filters;

extern "C" __global__ void headrace_filter_transpose(const unsigned char* in, unsigned char* out, unsigned long long rows,
                                                     unsigned long long cols, unsigned unit) {
  const unsigned long long o = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= rows * cols) return;
  const unsigned long long from = hf::transposed_source(o, rows, cols);
  for (unsigned b = 0; b < unit; ++b) out[o * unit + b] = in[from * unit + b];
}

extern "C" __global__ void headrace_filter_bit_unshuffle(const unsigned char* planes, unsigned char* out, unsigned long long n,
                                                         unsigned width) {
  const unsigned long long k = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < n * width) out[k] = hf::bitunshuffled_byte(planes, k / width, static_cast<unsigned>(k % width), n);
}

extern "C" __global__ void headrace_filter_undifference(unsigned char* data, unsigned long long n, unsigned long long row,
                                                        unsigned width, unsigned kind) {
  const unsigned long long r = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r * row < n) hf::undifference_row(data, r, row, n, width, static_cast<hf::Difference>(kind));
}
