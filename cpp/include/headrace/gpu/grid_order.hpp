// A grid field put into grid order (x fastest, then y, then z) from a layout of units, on a GPU: a
// streamed blocked or Hilbert-ordered frame handed out in read()'s natural shape.
// grid_order_shared.hpp holds the map; gather_grid_order_host is its CPU twin.
#pragma once

#include <cstddef>
#include <cstdint>

#include "headrace/gpu/device.hpp"
#include "headrace/gpu/grid_order_shared.hpp"
#include "headrace/gpu/kernel_module.hpp"

namespace headrace::gpu {

class GridOrderKernel {
 public:
  // Loads the kernel on `device`. Throws UnavailableError without a GPU or without the kernels.
  explicit GridOrderKernel(int device);

  // natural[p] = stored[stored_position(units, local_order, p)] for every grid point p, element_bytes
  // each; local_order: device memory of units.unit_points() entries, or 0 (x fastest within a unit).
  // Asynchronous on `stream`; stored and natural must not overlap.
  void gather(CUdeviceptr stored, CUdeviceptr natural, const GridUnits& units, CUdeviceptr local_order,
              std::uint32_t element_bytes, CUstream stream) const;

 private:
  Device device_;
  KernelModule module_;
  CUfunction gather_;
};

// The same gather over host memory (the CPU reference of the kernel).
void gather_grid_order_host(const std::byte* stored, std::byte* natural, const GridUnits& units,
                            const std::uint32_t* local_order, std::uint32_t element_bytes);

}  // namespace headrace::gpu
