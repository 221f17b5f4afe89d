#include "headrace/gpu/cuda_driver.hpp"

#include "headrace/error.hpp"
#include "headrace/shim/shared_library.hpp"

namespace headrace::gpu {
namespace {

// The driver's entry points, loaded once (shim::load_once) and never unloaded: libcuda's own threads and
// the static destructors that free GPU memory may outlive the rest.
struct Loaded {
  shim::SharedLibrary library{{"libcuda.so.1", "libcuda.so"}};
  CudaDriver api{};
  std::string why;
  bool ok = false;

  void load() {
    if (!library.loaded()) {
      why = "no CUDA driver: " + library.why();
      return;
    }
    auto& a = api;  // the table filled below
    bool all = true;
    all &= library.bind(a.cuInit, "cuInit", why);
    all &= library.bind(a.cuGetErrorName, "cuGetErrorName", why);
    all &= library.bind(a.cuDeviceGetCount, "cuDeviceGetCount", why);
    all &= library.bind(a.cuDeviceGet, "cuDeviceGet", why);
    all &= library.bind(a.cuDeviceGetAttribute, "cuDeviceGetAttribute", why);
    all &= library.bind(a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", why);
    all &= library.bind(a.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", why);
    all &= library.bind(a.cuCtxSetCurrent, "cuCtxSetCurrent", why);
    all &= library.bind(a.cuMemAlloc, "cuMemAlloc_v2", why);
    all &= library.bind(a.cuMemFree, "cuMemFree_v2", why);
    all &= library.bind(a.cuMemHostAlloc, "cuMemHostAlloc", why);
    all &= library.bind(a.cuMemFreeHost, "cuMemFreeHost", why);
    all &= library.bind(a.cuMemHostRegister, "cuMemHostRegister_v2", why);
    all &= library.bind(a.cuMemHostUnregister, "cuMemHostUnregister", why);
    all &= library.bind(a.cuMemGetInfo, "cuMemGetInfo_v2", why);
    all &= library.bind(a.cuMemGetAddressRange, "cuMemGetAddressRange_v2", why);
    all &= library.bind(a.cuMemcpyHtoD, "cuMemcpyHtoD_v2", why);
    all &= library.bind(a.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", why);
    all &= library.bind(a.cuMemcpy2DAsync, "cuMemcpy2DAsync_v2", why);
    all &= library.bind(a.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", why);
    all &= library.bind(a.cuMemcpyDtoH, "cuMemcpyDtoH_v2", why);
    all &= library.bind(a.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", why);
    all &= library.bind(a.cuMemsetD8Async, "cuMemsetD8Async", why);
    all &= library.bind(a.cuStreamCreate, "cuStreamCreate", why);
    all &= library.bind(a.cuStreamDestroy, "cuStreamDestroy_v2", why);
    all &= library.bind(a.cuStreamSynchronize, "cuStreamSynchronize", why);
    all &= library.bind(a.cuStreamWaitEvent, "cuStreamWaitEvent", why);
    all &= library.bind(a.cuStreamWaitValue32, "cuStreamWaitValue32_v2", why);
    all &= library.bind(a.cuStreamWriteValue32, "cuStreamWriteValue32_v2", why);
    all &= library.bind(a.cuLaunchHostFunc, "cuLaunchHostFunc", why);
    all &= library.bind(a.cuEventCreate, "cuEventCreate", why);
    all &= library.bind(a.cuEventDestroy, "cuEventDestroy_v2", why);
    all &= library.bind(a.cuEventRecord, "cuEventRecord", why);
    all &= library.bind(a.cuEventQuery, "cuEventQuery", why);
    all &= library.bind(a.cuEventSynchronize, "cuEventSynchronize", why);
    all &= library.bind(a.cuEventElapsedTime, "cuEventElapsedTime", why);
    all &= library.bind(a.cuModuleLoadData, "cuModuleLoadData", why);
    all &= library.bind(a.cuModuleUnload, "cuModuleUnload", why);
    all &= library.bind(a.cuModuleGetFunction, "cuModuleGetFunction", why);
    all &= library.bind(a.cuLaunchKernel, "cuLaunchKernel", why);
    if (!all) return;
    if (const CUresult result = a.cuInit(0); result != cuda_success) {
      const char* name = "?";
      a.cuGetErrorName(result, &name);
      why = std::string("cuInit failed: ") + name + (result == 100 ? " (no GPU)" : "");
      return;
    }
    ok = true;
  }
};

Loaded& loaded() { return shim::load_once<Loaded>(); }

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
