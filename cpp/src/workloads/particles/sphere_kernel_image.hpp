// The fatbin of sphere_glyphs.cu, embedded at build time; nullptr in a build without nvcc.
#pragma once

namespace headrace::workloads::particles {

[[nodiscard]] const void* sphere_kernel_image() noexcept;

}  // namespace headrace::workloads::particles
