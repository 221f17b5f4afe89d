#include "resident_kernel_image.hpp"

#include "headrace/gpu/kernel_module.hpp"

#if defined(HEADRACE_RESIDENT_FATBIN)
HEADRACE_EMBED_FATBIN(headrace_resident_rounds_fatbin, HEADRACE_RESIDENT_FATBIN);
#endif

namespace headrace::workloads::streamlines {

const void* resident_kernel_image() noexcept {
#if defined(HEADRACE_RESIDENT_FATBIN)
  return headrace_resident_rounds_fatbin;
#else
  return nullptr;
#endif
}

}  // namespace headrace::workloads::streamlines
