#include "headrace/gpu/kernel_module.hpp"

#include <utility>

#include "headrace/error.hpp"

namespace headrace::gpu {

KernelModule::KernelModule(const void* image, std::string what, const std::string& instead) : what_(std::move(what)) {
  HEADRACE_EXPECT(image != nullptr, UnavailableError,
                  what_ + " were not built (no nvcc when headrace was built); " + instead);
  check(require_driver().cuModuleLoadData(&module_, image), "cuModuleLoadData", what_);
}

KernelModule::~KernelModule() noexcept {
  if (module_ != nullptr) driver()->cuModuleUnload(module_);
}

CUfunction KernelModule::function(const char* name) const {
  CUfunction kernel = nullptr;
  check(driver()->cuModuleGetFunction(&kernel, module_, name), "cuModuleGetFunction", what_ + ": " + name);
  return kernel;
}

void launch_1d(CUfunction kernel, std::uint64_t threads, unsigned block_threads, CUstream stream, void** args) {
  if (threads == 0) return;
  const std::uint64_t blocks = (threads + block_threads - 1) / block_threads;
  HEADRACE_EXPECT(blocks <= 0x7fffffffu, UsageError, "a launch of " + std::to_string(threads) + " threads is too large");
  check(driver()->cuLaunchKernel(kernel, static_cast<unsigned>(blocks), 1, 1, block_threads, 1, 1, 0, stream, args,
                                 nullptr),
        "cuLaunchKernel");
}

}  // namespace headrace::gpu
