// The fatbin of chunk_hash_kernels.cu, embedded at build time; nullptr in a build without nvcc.
#pragma once

namespace headrace::codec::gpu {

[[nodiscard]] const void* chunk_hash_kernel_image() noexcept;

}  // namespace headrace::codec::gpu
