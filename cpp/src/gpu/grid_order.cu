// The grid-order gather (gpu/grid_order_shared.hpp holds the map, shared with the CPU twin): a thread
// per grid point. Built into a fatbin by nvcc and loaded through the driver at run time.
#include "headrace/gpu/grid_order_shared.hpp"

namespace hg = headrace::gpu;

extern "C" __global__ void headrace_gather_grid_order(const unsigned char* stored, unsigned char* natural, hg::GridUnits units,
                                                      const unsigned* local_order, unsigned element_bytes) {
  const unsigned long long p = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= units.points()) return;
  hg::copy_element(stored + hg::stored_position(units, local_order, p) * element_bytes, natural + p * element_bytes,
                   element_bytes);
}
