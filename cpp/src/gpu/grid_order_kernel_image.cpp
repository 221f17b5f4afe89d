#include "grid_order_kernel_image.hpp"

#include "headrace/gpu/kernel_module.hpp"

#if defined(HEADRACE_GRID_ORDER_FATBIN)
HEADRACE_EMBED_FATBIN(headrace_grid_order_fatbin, HEADRACE_GRID_ORDER_FATBIN);
#endif

namespace headrace::gpu {

const void* grid_order_kernel_image() noexcept {
#if defined(HEADRACE_GRID_ORDER_FATBIN)
  return headrace_grid_order_fatbin;
#else
  return nullptr;
#endif
}

}  // namespace headrace::gpu
