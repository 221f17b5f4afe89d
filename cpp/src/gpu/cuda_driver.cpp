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
    all &= s.library.bind(a.cuInit, "cuInit", s.why);
    all &= s.library.bind(a.cuGetErrorName, "cuGetErrorName", s.why);
    all &= s.library.bind(a.cuDeviceGetCount, "cuDeviceGetCount", s.why);
    all &= s.library.bind(a.cuDeviceGet, "cuDeviceGet", s.why);
    all &= s.library.bind(a.cuDeviceGetAttribute, "cuDeviceGetAttribute", s.why);
    all &= s.library.bind(a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", s.why);
    all &= s.library.bind(a.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", s.why);
    all &= s.library.bind(a.cuCtxSetCurrent, "cuCtxSetCurrent", s.why);
    all &= s.library.bind(a.cuMemAlloc, "cuMemAlloc_v2", s.why);
    all &= s.library.bind(a.cuMemFree, "cuMemFree_v2", s.why);
    all &= s.library.bind(a.cuMemHostAlloc, "cuMemHostAlloc", s.why);
    all &= s.library.bind(a.cuMemFreeHost, "cuMemFreeHost", s.why);
    all &= s.library.bind(a.cuMemHostRegister, "cuMemHostRegister_v2", s.why);
    all &= s.library.bind(a.cuMemHostUnregister, "cuMemHostUnregister", s.why);
    all &= s.library.bind(a.cuMemGetInfo, "cuMemGetInfo_v2", s.why);
    all &= s.library.bind(a.cuMemGetAddressRange, "cuMemGetAddressRange_v2", s.why);
    all &= s.library.bind(a.cuMemcpyHtoD, "cuMemcpyHtoD_v2", s.why);
    all &= s.library.bind(a.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", s.why);
    all &= s.library.bind(a.cuMemcpy2DAsync, "cuMemcpy2DAsync_v2", s.why);
    all &= s.library.bind(a.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", s.why);
    all &= s.library.bind(a.cuMemcpyDtoH, "cuMemcpyDtoH_v2", s.why);
    all &= s.library.bind(a.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", s.why);
    all &= s.library.bind(a.cuMemsetD8Async, "cuMemsetD8Async", s.why);
    all &= s.library.bind(a.cuStreamCreate, "cuStreamCreate", s.why);
    all &= s.library.bind(a.cuStreamDestroy, "cuStreamDestroy_v2", s.why);
    all &= s.library.bind(a.cuStreamSynchronize, "cuStreamSynchronize", s.why);
    all &= s.library.bind(a.cuStreamWaitEvent, "cuStreamWaitEvent", s.why);
    all &= s.library.bind(a.cuStreamWaitValue32, "cuStreamWaitValue32_v2", s.why);
    all &= s.library.bind(a.cuStreamWriteValue32, "cuStreamWriteValue32_v2", s.why);
    all &= s.library.bind(a.cuLaunchHostFunc, "cuLaunchHostFunc", s.why);
    all &= s.library.bind(a.cuEventCreate, "cuEventCreate", s.why);
    all &= s.library.bind(a.cuEventDestroy, "cuEventDestroy_v2", s.why);
    all &= s.library.bind(a.cuEventRecord, "cuEventRecord", s.why);
    all &= s.library.bind(a.cuEventQuery, "cuEventQuery", s.why);
    all &= s.library.bind(a.cuEventSynchronize, "cuEventSynchronize", s.why);
    all &= s.library.bind(a.cuEventElapsedTime, "cuEventElapsedTime", s.why);
    all &= s.library.bind(a.cuModuleLoadData, "cuModuleLoadData", s.why);
    all &= s.library.bind(a.cuModuleUnload, "cuModuleUnload", s.why);
    all &= s.library.bind(a.cuModuleGetFunction, "cuModuleGetFunction", s.why);
    all &= s.library.bind(a.cuLaunchKernel, "cuLaunchKernel", s.why);
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
