#include "chunk_hash_kernel_image.hpp"

#include "headrace/gpu/kernel_module.hpp"

#if defined(HEADRACE_CHUNK_HASH_FATBIN)
HEADRACE_EMBED_FATBIN(headrace_chunk_hash_kernels_fatbin, HEADRACE_CHUNK_HASH_FATBIN);
#endif

namespace headrace::codec::gpu {

const void* chunk_hash_kernel_image() noexcept {
#if defined(HEADRACE_CHUNK_HASH_FATBIN)
  return headrace_chunk_hash_kernels_fatbin;
#else
  return nullptr;
#endif
}

}  // namespace headrace::codec::gpu
