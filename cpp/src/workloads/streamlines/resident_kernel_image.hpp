// The fatbin of resident_rounds.cu, embedded at build time; nullptr in a build without nvcc.
#pragma once

namespace headrace::workloads::streamlines {

[[nodiscard]] const void* resident_kernel_image() noexcept;

}  // namespace headrace::workloads::streamlines
