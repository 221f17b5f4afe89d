// The fatbin of grid_order.cu, embedded at build time; nullptr in a build without nvcc.
#pragma once

namespace headrace::gpu {

[[nodiscard]] const void* grid_order_kernel_image() noexcept;

}  // namespace headrace::gpu
