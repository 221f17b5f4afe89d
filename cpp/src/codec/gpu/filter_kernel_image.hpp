#pragma once

namespace headrace::codec::gpu {

// The fatbin of filter_kernels.cu, or nullptr in a build without nvcc.
[[nodiscard]] const void* filter_kernel_image() noexcept;

}  // namespace headrace::codec::gpu
