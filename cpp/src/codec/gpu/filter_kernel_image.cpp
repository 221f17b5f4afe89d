#include "filter_kernel_image.hpp"

#include "headrace/gpu/kernel_module.hpp"

#if defined(HEADRACE_FILTER_FATBIN)
HEADRACE_EMBED_FATBIN(headrace_filter_kernels_fatbin, HEADRACE_FILTER_FATBIN);
#endif

namespace headrace::codec::gpu {

const void* filter_kernel_image() noexcept {
#if defined(HEADRACE_FILTER_FATBIN)
  return headrace_filter_kernels_fatbin;
#else
  return nullptr;
#endif
}

}  // namespace headrace::codec::gpu
