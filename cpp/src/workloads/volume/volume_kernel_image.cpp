#include "volume_kernel_image.hpp"

#include "headrace/gpu/kernel_module.hpp"

#if defined(HEADRACE_VOLUME_FATBIN)
HEADRACE_EMBED_FATBIN(headrace_volume_kernels_fatbin, HEADRACE_VOLUME_FATBIN);
#endif

namespace headrace::workloads::volume {

const void* volume_kernel_image() noexcept {
#if defined(HEADRACE_VOLUME_FATBIN)
  return headrace_volume_kernels_fatbin;
#else
  return nullptr;
#endif
}

}  // namespace headrace::workloads::volume
