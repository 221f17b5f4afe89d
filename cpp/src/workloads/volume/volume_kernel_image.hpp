#pragma once

namespace headrace::workloads::volume {

// The fatbin of volume_kernels.cu, or nullptr in a build without nvcc.
[[nodiscard]] const void* volume_kernel_image() noexcept;

}  // namespace headrace::workloads::volume
