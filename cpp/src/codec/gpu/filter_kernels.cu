// The codec filters' decoding kernels (codec/filters_shared.hpp holds the math, shared with the CPU
// twins): a thread per output unit (transpose, bit unshuffle) or a warp per row (the running sums). Built into a
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

// A warp per row: the row's inclusive scan in tiles of 32 lanes x undifference_per_lane elements, each
// lane scanning its consecutive elements, the warp scanning the lanes' totals (shuffles), a carry from
// tile to tile. The combination is hf::combine_units, the CPU's.
constexpr unsigned undifference_per_lane = 8;

extern "C" __global__ void headrace_filter_undifference(unsigned char* data, unsigned long long n, unsigned long long row,
                                                        unsigned width, unsigned kind) {
  const unsigned long long r = (static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const unsigned lane = threadIdx.x % 32;
  const auto difference = static_cast<hf::Difference>(kind);
  const unsigned long long first = r * row;
  if (first >= n) return;  // the whole warp: its row is past the end
  const unsigned long long last = first + row < n ? first + row : n;
  unsigned long long carry = 0;
  for (unsigned long long tile = first; tile < last; tile += 32ull * undifference_per_lane) {
    const unsigned long long mine = tile + static_cast<unsigned long long>(lane) * undifference_per_lane;
    unsigned long long values[undifference_per_lane];
    unsigned long long total = 0;
    for (unsigned k = 0; k < undifference_per_lane; ++k) {
      if (mine + k < last) total = hf::combine_units(total, hf::load_unit(data + (mine + k) * width, width), width, difference);
      values[k] = total;  // the lane's inclusive scan
    }
    unsigned long long scanned = total;  // the warp's inclusive scan of the lanes' totals
    for (unsigned offset = 1; offset < 32; offset *= 2) {
      const unsigned long long before = __shfl_up_sync(0xffffffffu, scanned, offset);
      if (lane >= offset) scanned = hf::combine_units(before, scanned, width, difference);
    }
    unsigned long long lanes_before = __shfl_up_sync(0xffffffffu, scanned, 1);
    if (lane == 0) lanes_before = 0;
    const unsigned long long prefix = hf::combine_units(carry, lanes_before, width, difference);
    for (unsigned k = 0; k < undifference_per_lane; ++k)
      if (mine + k < last) hf::store_unit(data + (mine + k) * width, width, hf::combine_units(prefix, values[k], width, difference));
    carry = hf::combine_units(carry, __shfl_sync(0xffffffffu, scanned, 31), width, difference);
  }
}
