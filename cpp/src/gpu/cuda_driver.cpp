#include "headrace/gpu/cuda_driver.hpp"

#include <mutex>

#include "headrace/error.hpp"
#include "headrace/shim/shared_library.hpp"

namespace headrace::gpu {
namespace {

struct Loaded {
  shim::SharedLibrary library{{"libcuda.so.1", "libcuda.so"}};
  CudaDriver api{};
  std::string why;
  bool ok = false;
};

template <typename Function>
bool bind(const shim::SharedLibrary& library, Function& slot, const char* name, std::string& why) {
  slot = library.function<Function>(name);
  if (slot == nullptr && why.empty()) why = library.path() + " has no " + name;
  return slot != nullptr;
}

Loaded& loaded() {
  static Loaded state;
  static std::once_flag once;
  std::call_once(once, [] {
    auto& s = state;
    if (!s.library.loaded()) {
      s.why = "no CUDA driver: " + s.library.why();
      return;
    }
    auto& a = s.api;
    bool all = true;
    all &= bind(s.library, a.cuInit, "cuInit", s.why);
    all &= bind(s.library, a.cuGetErrorName, "cuGetErrorName", s.why);
    all &= bind(s.library, a.cuDeviceGetCount, "cuDeviceGetCount", s.why);
    all &= bind(s.library, a.cuDeviceGet, "cuDeviceGet", s.why);
    all &= bind(s.library, a.cuDeviceGetAttribute, "cuDeviceGetAttribute", s.why);
    all &= bind(s.library, a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", s.why);
    all &= bind(s.library, a.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", s.why);
    all &= bind(s.library, a.cuCtxSetCurrent, "cuCtxSetCurrent", s.why);
    all &= bind(s.library, a.cuMemAlloc, "cuMemAlloc_v2", s.why);
    all &= bind(s.library, a.cuMemFree, "cuMemFree_v2", s.why);
    all &= bind(s.library, a.cuMemHostAlloc, "cuMemHostAlloc", s.why);
    all &= bind(s.library, a.cuMemFreeHost, "cuMemFreeHost", s.why);
    all &= bind(s.library, a.cuMemHostRegister, "cuMemHostRegister_v2", s.why);
    all &= bind(s.library, a.cuMemHostUnregister, "cuMemHostUnregister", s.why);
    all &= bind(s.library, a.cuMemGetInfo, "cuMemGetInfo_v2", s.why);
    all &= bind(s.library, a.cuMemGetAddressRange, "cuMemGetAddressRange_v2", s.why);
    all &= bind(s.library, a.cuMemcpyHtoD, "cuMemcpyHtoD_v2", s.why);
    all &= bind(s.library, a.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", s.why);
    all &= bind(s.library, a.cuMemcpy2DAsync, "cuMemcpy2DAsync_v2", s.why);
    all &= bind(s.library, a.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", s.why);
    all &= bind(s.library, a.cuMemcpyDtoH, "cuMemcpyDtoH_v2", s.why);
    all &= bind(s.library, a.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", s.why);
    all &= bind(s.library, a.cuMemsetD8Async, "cuMemsetD8Async", s.why);
    all &= bind(s.library, a.cuStreamCreate, "cuStreamCreate", s.why);
    all &= bind(s.library, a.cuStreamDestroy, "cuStreamDestroy_v2", s.why);
    all &= bind(s.library, a.cuStreamSynchronize, "cuStreamSynchronize", s.why);
    all &= bind(s.library, a.cuStreamWaitEvent, "cuStreamWaitEvent", s.why);
    all &= bind(s.library, a.cuStreamWaitValue32, "cuStreamWaitValue32_v2", s.why);
    all &= bind(s.library, a.cuStreamWriteValue32, "cuStreamWriteValue32_v2", s.why);
    all &= bind(s.library, a.cuLaunchHostFunc, "cuLaunchHostFunc", s.why);
    all &= bind(s.library, a.cuEventCreate, "cuEventCreate", s.why);
    all &= bind(s.library, a.cuEventDestroy, "cuEventDestroy_v2", s.why);
    all &= bind(s.library, a.cuEventRecord, "cuEventRecord", s.why);
    all &= bind(s.library, a.cuEventQuery, "cuEventQuery", s.why);
    all &= bind(s.library, a.cuEventSynchronize, "cuEventSynchronize", s.why);
    all &= bind(s.library, a.cuEventElapsedTime, "cuEventElapsedTime", s.why);
    all &= bind(s.library, a.cuModuleLoadData, "cuModuleLoadData", s.why);
    all &= bind(s.library, a.cuModuleUnload, "cuModuleUnload", s.why);
    all &= bind(s.library, a.cuModuleGetFunction, "cuModuleGetFunction", s.why);
    all &= bind(s.library, a.cuLaunchKernel, "cuLaunchKernel", s.why);
    if (!all) return;
    if (const CUresult result = a.cuInit(0); result != cuda_success) {
      const char* name = "?";
      a.cuGetErrorName(result, &name);
      s.why = std::string("cuInit failed: ") + name + (result == 100 ? " (no GPU)" : "");
      return;
    }
    s.ok = true;
  });
  return state;
}

}  // namespace

const CudaDriver* driver() noexcept { return loaded().ok ? &loaded().api : nullptr; }

const std::string& why_no_driver() noexcept { return loaded().why; }

const CudaDriver& require_driver() {
  const CudaDriver* api = driver();
  HEADRACE_EXPECT(api != nullptr, UnavailableError, "GPU path unavailable: " + why_no_driver());
  return *api;
}

int device_count() noexcept {
  const CudaDriver* api = driver();
  int count = 0;
  if (api == nullptr || api->cuDeviceGetCount(&count) != cuda_success) return 0;
  return count;
}

bool gpu_present(std::string* why) {
  if (driver() == nullptr) {
    if (why != nullptr) *why = why_no_driver();
    return false;
  }
  if (device_count() == 0) {
    if (why != nullptr) *why = "no GPU";
    return false;
  }
  return true;
}

const char* result_name(CUresult result) noexcept {
  const char* name = "unknown CUresult";
  if (const CudaDriver* api = driver()) api->cuGetErrorName(result, &name);
  return name;
}

void check(CUresult result, const char* call, const std::string& detail) {
  if (result == cuda_success) return;
  std::string message = std::string(call) + " failed: " + result_name(result) + " (" + std::to_string(result) + ")";
  if (!detail.empty()) message += ": " + detail;
  if (result == cuda_error_out_of_memory) throw GpuOutOfMemoryError(message, result);
  throw CudaError(message, result);
}

}  // namespace headrace::gpu
