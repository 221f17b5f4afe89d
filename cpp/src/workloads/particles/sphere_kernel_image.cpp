#include "sphere_kernel_image.hpp"

#include "headrace/gpu/kernel_module.hpp"

#if defined(HEADRACE_SPHERE_FATBIN)
HEADRACE_EMBED_FATBIN(headrace_sphere_glyphs_fatbin, HEADRACE_SPHERE_FATBIN);
#endif

namespace headrace::workloads::particles {

const void* sphere_kernel_image() noexcept {
#if defined(HEADRACE_SPHERE_FATBIN)
  return headrace_sphere_glyphs_fatbin;
#else
  return nullptr;
#endif
}

}  // namespace headrace::workloads::particles
